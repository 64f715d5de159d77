"""A screen's compositor: a headless sway with one output at the screen's size, and the
Chromium on it.

sway refuses to run as root (it checks that it cannot become root again), and the agent is
root in its box: sway runs as the box's uid SWAY_UID (`setpriv`, which takes CAP_SETUID and
CAP_SETGID in the box's own user namespace: docs/security.md). Its runtime folder, where
its Wayland and IPC sockets are, is its own in /tmp; the sockets are open to the box's
root (which has no CAP_DAC_OVERRIDE), as the X server's socket is to every program of an
X11 box. XWayland only with the `x11_apps` feature (`xwayland`): sway starts it on the first
X client, and the box's programs get its display in DISPLAY; without it, X11 programs
have no display in a Wayland box.
"""

from __future__ import annotations

import contextlib
import glob
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from holm.agent.desktop import processes
from holm.agent.desktop.desktop_up import StartFailed, read_devtools_port
from holm.agent.wayland.sway_ipc import SwayIpc, leaves

SWAY_UID = 1000
SWAY_START_S = 15.0
CHROMIUM_START_S = 30.0
# Chromium on Wayland (its Ozone layer); the rest of its flags are the X11 box's (among
# them its one --enable-features, which a second would replace).
CHROMIUM_WAYLAND_FLAGS = ("--ozone-platform=wayland",)
WAYVNC_START_S = 10.0
X11_SOCKETS = Path("/tmp/.X11-unix")
# The environment that says a program's display is this screen's compositor.
WAYLAND_ENV = ("WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "SWAYSOCK")


# Where each screen's sway makes its runtime folder: made by the agent, open to sway's uid
# (a box's /tmp is its root's alone) and sticky, as /tmp itself is on a host.
RUNTIME_PARENT = Path("/tmp/holm-wayland")


def runtime_dir(screen: int) -> Path:
    RUNTIME_PARENT.mkdir(exist_ok=True)
    RUNTIME_PARENT.chmod(0o1777)
    return RUNTIME_PARENT / f"{os.getpid()}-{screen}"


def sway_config(width: int, height: int, xwayland: bool = False) -> str:
    # No bar, no borders, no animations, no idle: the screen shows the windows only, as
    # the X11 box's openbox does. The cursor is never drawn in the screen's pixels (as
    # Xvfb's is not): a frame does not depend on where the pointer was left.
    return "\n".join(
        [
            f"output HEADLESS-1 resolution {width}x{height} position 0 0 bg #000000 solid_color",
            "default_border none",
            "default_floating_border none",
            "titlebar_border_thickness 0",
            "focus_follows_mouse no",
            "mouse_warping none",
            "xwayland enable" if xwayland else "xwayland disable",
            "seat * hide_cursor 1",
            "",
        ]
    )


class Sway:
    """A started sway: its process, its Wayland socket's path and its IPC socket's."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        folder: Path,
        socket: str,
        ipc: str,
        x_display: str | None = None,
    ) -> None:
        self.proc = proc
        self.folder = folder
        self.socket = socket
        self.ipc = ipc
        # XWayland's display (`:N`), when the screen has one.
        self.x_display = x_display

    def env(self) -> dict[str, str]:
        env = {
            "WAYLAND_DISPLAY": self.socket,
            "XDG_RUNTIME_DIR": str(self.folder),
            "SWAYSOCK": self.ipc,
            "XDG_SESSION_TYPE": "wayland",
        }
        if self.x_display is not None:
            env["DISPLAY"] = self.x_display
        return env


def start_sway(
    screen: int,
    width: int,
    height: int,
    run_dir: Path,
    env: dict[str, str],
    xwayland: bool = False,
) -> Sway:
    folder = runtime_dir(screen)
    if xwayland:
        # Where XWayland's sockets go, made by sway's uid: open to all, as on a host.
        X11_SOCKETS.mkdir(exist_ok=True)
        with contextlib.suppress(PermissionError):
            X11_SOCKETS.chmod(0o1777)
    sway_env = {
        **{k: v for k, v in env.items() if k not in ("DISPLAY", *WAYLAND_ENV)},
        "XDG_RUNTIME_DIR": str(folder),
        "HOME": str(folder),
        "WLR_BACKENDS": "headless",
        "WLR_LIBINPUT_NO_DEVICES": "1",
        "WLR_RENDERER": "pixman",
        "WLR_HEADLESS_OUTPUTS": "1",
        "HOLM_SWAY_CONFIG": sway_config(width, height, xwayland),
        # XWayland lets in only the uid that started it (sway's), and the box's programs
        # run as its root: wlroots starts it through this wrapper, which turns its access
        # control off (`-ac`), as an X11 box's Xvfb lets in every local client. It is the
        # box's own X server: its sockets are in the box's /tmp and network namespace.
        "WLR_XWAYLAND": str(folder / "Xwayland"),
    }
    # The folder is made by sway's own uid (the box's root may not chown), with its config
    # (the run folder may be closed to that uid); it is open to the box's root to reach the
    # sockets (made under umask 0) and to list them.
    script = (
        f'umask 077 && mkdir -m 0755 {folder} && printf %s "$HOLM_SWAY_CONFIG" >{folder}/config'
        f" && printf '#!/bin/sh\\nexec /usr/bin/Xwayland \"$@\" -ac\\n' >{folder}/Xwayland"
        f" && chmod 0700 {folder}/Xwayland && umask 0 && exec sway -c {folder}/config"
    )
    proc = processes.spawn(
        [
            "setpriv",
            f"--reuid={SWAY_UID}",
            f"--regid={SWAY_UID}",
            "--clear-groups",
            "sh",
            "-c",
            script,
        ],
        env=sway_env,
        cwd="/",
        log_path=run_dir / f"sway-{screen}.log",
    )
    deadline = time.monotonic() + SWAY_START_S
    while True:
        ipc = glob.glob(str(folder / "sway-ipc.*.sock"))
        sockets = [p for p in glob.glob(str(folder / "wayland-*")) if not p.endswith(".lock")]
        # The IPC socket answers once sway has set up its outputs and its Wayland socket.
        x_display = _x_display_of(proc.pid) if xwayland else None
        if ipc and sockets and (x_display or not xwayland) and _answers(ipc[0]):
            processes.supervise(f"sway (screen {screen})", proc)
            return Sway(proc, folder, sockets[0], ipc[0], x_display)
        if proc.poll() is not None:
            raise StartFailed(
                f"screen {screen}: sway ended with {proc.returncode}: "
                f"{processes.log_tail(run_dir / f'sway-{screen}.log')}"
            )
        if time.monotonic() > deadline:
            processes.kill_group(proc.pid)
            raise StartFailed(f"screen {screen}: sway did not start within {SWAY_START_S:.0f} s")
        time.sleep(0.02)


def _x_display_of(pid: int) -> str | None:
    """The X display whose lock file names `pid` (wlroots takes a free display for
    XWayland at sway's start and writes its own pid in the lock, NUL-terminated)."""
    for lock in Path("/tmp").glob(".X*-lock"):
        with contextlib.suppress(OSError, ValueError):
            if int(lock.read_text().strip("\0 \n")) == pid:
                return ":" + lock.name[2:-5]
    return None


def _answers(ipc: str) -> bool:
    try:
        conn = SwayIpc(ipc)
    except OSError:
        return False
    try:
        return any(o.get("name") for o in conn.outputs())
    except (OSError, ValueError):
        return False
    finally:
        conn.close()


def wait_chromium(
    screen: int, ipc: str, profile: Path, proc: subprocess.Popen[bytes], run_dir: Path
) -> int:
    """Wait for Chromium's DevTools port and its window on sway; return the port (the
    screen's stillness, waited next, waits for its first drawing)."""
    port_file = profile / "DevToolsActivePort"
    log_file = run_dir / f"chromium-{screen}.log"
    deadline = time.monotonic() + CHROMIUM_START_S
    port: int | None = None
    conn = SwayIpc(ipc)
    try:
        while True:
            if port is None:
                port = read_devtools_port(port_file)
            mapped = any(
                (w.get("app_id") or "").lower() == "chromium" and w.get("visible")
                for w in leaves(conn.tree())
            )
            if port is not None and mapped:
                return port
            if proc.poll() is not None:
                raise StartFailed(
                    f"screen {screen}: chromium ended with {proc.returncode} (see {log_file})"
                )
            if time.monotonic() > deadline:
                missing = "no DevTools port" if port is None else "its window was not mapped"
                raise StartFailed(
                    f"screen {screen}: chromium did not come up within "
                    f"{CHROMIUM_START_S:.0f} s: {missing} (see {log_file})"
                )
            time.sleep(0.05)
    finally:
        conn.close()


def start_wayvnc(screen: int, sway: Sway, run_dir: Path, env: dict[str, str]) -> str:
    """The screen's VNC server for the viewer relay, on `DIR/vnc-<i>.sock` (a Unix socket,
    as the X11 screen's viewer socket is): one wayvnc serves every viewer of the screen,
    and holmd's relay decides which of them may send input (docs/security.md)."""
    path = run_dir / f"vnc-{screen}.sock"
    path.unlink(missing_ok=True)
    proc = processes.spawn(
        ["wayvnc", "--unix-socket", "--log-level=warning", str(path)],
        env=env,
        cwd="/",
        log_path=run_dir / f"wayvnc-{screen}.log",
    )
    wait_started(
        "wayvnc", screen, proc, path.exists, WAYVNC_START_S, run_dir / f"wayvnc-{screen}.log"
    )
    path.chmod(0o600)
    processes.supervise(f"wayvnc (screen {screen})", proc)
    return str(path)


def wait_started(
    what: str,
    screen: int,
    proc: subprocess.Popen[bytes],
    ready: Callable[[], bool],
    within_s: float,
    log_path: Path,
) -> None:
    """Wait until `ready()`. A program that ends first, or is not ready in time (it is
    then ended), fails the screen's start, naming it."""
    deadline = time.monotonic() + within_s
    while not ready():
        if proc.poll() is not None:
            raise StartFailed(
                f"screen {screen}: {what} ended with {proc.returncode}: "
                f"{processes.log_tail(log_path)}"
            )
        if time.monotonic() > deadline:
            processes.kill_group(proc.pid)
            raise StartFailed(
                f"screen {screen}: {what} did not start within {within_s:.0f} s (see {log_path})"
            )
        time.sleep(0.02)
