"""Bringing a screen up: Xvfb, openbox and Chromium, each a child of the agent (x11vnc
starts only for a viewer: viewer_socket.py).

Everything here blocks (it waits for processes and sockets); the server runs it in threads.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shlex
import socket
import struct
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from Xlib import X, display
from Xlib.error import XError

from holm.agent.desktop import openbox_config, processes
from holm.agent.x11.windows import ClientWindow, client_windows, wm_running

log = logging.getLogger("holm.agent")

# How many display numbers past the base a screen tries before it gives up.
DISPLAY_TRIES = 64
XVFB_START_S = 10.0
PATH_SOCKET_GRACE_S = 0.5
WM_START_S = 10.0
CHROMIUM_START_S = 45.0

# Chromium reaches the internet on its own unless told not to; as root it needs
# --no-sandbox, and --test-type hides the warning bar that flag brings (it would change
# every frame).
CHROMIUM_FLAGS = (
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-sandbox",
    "--test-type",
    "--no-default-browser-check",
    "--password-store=basic",
    "--disable-dev-shm-usage",
    "--hide-crash-restore-bubble",
    # A wheel notch scrolls the page at once, not over the next ~150 ms: a scroll step has
    # moved the page by the time it answers, and the frame after it is the page at rest.
    "--disable-smooth-scrolling",
)
# Measured for Chromium's CPU per click and per key (bench/action_cost.py --against, one
# flag at a time) and left out (docs/agent.md, "CPU per action"): --disable-hang-monitor,
# --num-raster-threads=1, --disable-best-effort-tasks and --disable-gpu-compositing saved
# nothing beyond the noise; --disable-threaded-compositing saved CPU on a move, but the
# page then showed no letter typed into it.

# --- Memory: what an idle box's Chromium need not hold (bench/local.py --memory) ---
# Each flag here was measured on its own and kept only where it saved memory and no
# capability went with it (docs/agent.md, "Memory"). Box pages get no WebGL under Xvfb
# either way, so the GPU process has nothing to do but composite in software. Chromium
# takes one --disable-features and one --enable-features (the last): a feature to turn
# off for another reason goes into this list, not into a second flag.
MEMORY_FLAGS = (
    # The address bar's popup drawn by Views instead of a WebUI page, which Chromium keeps
    # preloaded in a renderer of its own (~36 MiB); no spare renderer kept for a next tab.
    "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup,"
    "SpareRendererForSitePerProcess",
    # The network service as a thread of the browser process, not a process of its own.
    "--enable-features=NetworkServiceInProcess2",
    # No GPU, no SwiftShader: the GPU process composites in software only.
    "--disable-gpu",
    "--disable-software-rasterizer",
    # The device's class for an on-device AI model given as "GPU blocked" (8), as it is
    # here: otherwise Chromium starts its OnDeviceModelService 3 minutes in to measure
    # the class, and keeps that process (~8.5 MiB a box). No model can come anyway:
    # component updates are off.
    "--optimization-guide-performance-class=8",
    # Compositing (all the GPU process does here) on a thread of the browser, and no
    # unsandboxed zygote, which was there to fork the GPU process: two Chromium images
    # fewer, each with its own relocated copy of Chromium's tables (~19 MiB of a box's own
    # pages). Either flag alone saves nothing. Chromium's sandbox is off in a box anyway
    # (--no-sandbox: the box is the sandbox), so no boundary goes with the GPU process.
    "--in-process-gpu",
    "--no-unsandboxed-zygote",
)
# --- end of the memory flags ---

# Window geometry: maximised, and given no size. Chromium maximises a window only when no
# --window-size names its bounds; with them (the screen's size) it opened a restored
# window one pixel short of the screen, which Chromium draws with its own frame (a border
# and a shadow margin). In that window the toolbar's rounded top-left corner came out
# antialiased a level or two differently at each repaint (a navigation, a title change),
# so a fork of a browser run ended on other pixels than its source. Maximised, the window
# has no frame of its own, fills the screen (or the work area beside a dock) and repaints
# that corner the same every time.
CHROMIUM_WINDOW_FLAGS = ("--start-maximized",)


class StartFailed(Exception):
    """A part of the desktop did not come up; the message names it."""


def chromium_profile(home: str, screen: int) -> Path:
    return Path(home) / ".holm" / f"chromium-{screen}"


def chromium_argv(
    home: str, screen: int, accessibility: bool = False, extra_flags: Sequence[str] = ()
) -> list[str]:
    # With the accessibility bus, the pages' widgets are on it too (a11y_bus.py).
    a11y = ["--force-renderer-accessibility"] if accessibility else []
    return [
        "/usr/bin/chromium",
        *CHROMIUM_FLAGS,
        *MEMORY_FLAGS,
        *a11y,
        *extra_flags,
        "--remote-debugging-port=0",
        f"--user-data-dir={chromium_profile(home, screen)}",
        *CHROMIUM_WINDOW_FLAGS,
    ]


def _abstract_name(number: int) -> str:
    return f"\0/tmp/.X11-unix/X{number}"


def _path_name(number: int) -> str:
    return f"/tmp/.X11-unix/X{number}"


def _abstract_taken(number: int) -> bool:
    """Whether some X server of this network namespace holds display `number`'s abstract
    socket. X clients built on libxcb try that socket first, so a display whose abstract
    name belongs to another box's server would send our clients there."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.bind(_abstract_name(number))
    except OSError as exc:
        return exc.errno == errno.EADDRINUSE
    finally:
        probe.close()
    return False


def _abstract_owner(number: int) -> int | None:
    """The pid of the process that serves display `number`'s abstract socket."""
    return _owner(_abstract_name(number))


def _path_ready(number: int, since: float) -> bool:
    """Whether display `number`'s socket file answers, or will not be made. Xvfb listens on
    the abstract socket first and then binds the file, and a client that finds the file
    before Xvfb listens on it is refused (python-xlib connects to the file when it exists:
    seen as a box whose X connections "did not start", Connection refused, under load).
    A file that has not appeared half a second after the abstract socket answered is one
    Xvfb could not make (no /tmp/.X11-unix it may write); clients then use the other."""
    path = _path_name(number)
    if os.path.exists(path):
        return _owner(path) is not None
    return time.monotonic() - since > PATH_SOCKET_GRACE_S


def _owner(address: str) -> int | None:
    """The pid of the process that listens on the Unix socket `address`."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(address)
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    finally:
        conn.close()
    pid, _, _ = struct.unpack("3i", creds)
    return int(pid)


def _lock_held(number: int) -> bool:
    lock = Path(f"/tmp/.X{number}-lock")
    try:
        pid = int(lock.read_text().strip())
    except (OSError, ValueError):
        return lock.exists()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_xvfb(
    screen: int, width: int, height: int, base: int, run_dir: Path, env: dict[str, str]
) -> tuple[int, subprocess.Popen[bytes]]:
    """Start Xvfb on the first free display at or above `base`.

    Several boxes can share the host's network namespace (and so the abstract X socket
    names) while each has its own /tmp. A display is tried only when its lock file and its
    abstract name are free; Xvfb itself refuses a display whose lock another server holds.
    It is ready when its abstract socket answers, and it must be this Xvfb that answers
    (the peer's pid), else the next number is tried. (`-displayfd` would tell readiness too,
    but with it Xvfb takes no lock file, and servers that rely on lock files would then
    take our display.)
    """
    for number in range(base, base + DISPLAY_TRIES):
        if _lock_held(number) or _abstract_taken(number):
            continue
        proc = processes.spawn(
            [
                "Xvfb",
                f":{number}",
                "-screen",
                "0",
                f"{width}x{height}x24",
                "-nolisten",
                "tcp",
                "-noreset",
            ],
            env=env,
            log_path=run_dir / f"xvfb-{screen}.log",
        )
        deadline = time.monotonic() + XVFB_START_S
        owner = _abstract_owner(number)
        while owner is None and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
            owner = _abstract_owner(number)
        if owner != proc.pid:
            if owner is not None:
                log.warning("display :%d is served by another process; trying the next", number)
            _stop(proc)
            continue
        since = time.monotonic()
        while not _path_ready(number, since) and proc.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.005)
        processes.supervise(f"Xvfb :{number}", proc)
        return number, proc
    raise StartFailed(
        f"screen {screen}: no free X display from :{base} to :{base + DISPLAY_TRIES - 1}"
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    processes.kill_group(proc.pid)
    proc.wait()
    processes.forget(proc)


def start_window_manager(
    screen: int, display_name: str, run_dir: Path, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """Start openbox and return once its event loop runs.

    openbox names itself on the root (`_NET_SUPPORTING_WM_CHECK`) early in its start and
    then goes on starting. A window mapped in that gap can have its MapRequest read off
    the connection during the start and then sit in Xlib's queue, unseen by openbox's
    loop, which waits on the socket: the window stays unmapped until some later event
    wakes openbox (seen: an xeyes launched as the box came up, never shown in 30 s). So
    the screen is up only once openbox has run its `--startup` command, which it runs
    right before its loop."""
    started = run_dir / f"openbox-{screen}.started"
    started.unlink(missing_ok=True)
    rc = openbox_config.write_box_rc(run_dir, screen)
    config = [] if rc is None else ["--config-file", str(rc)]
    proc = processes.spawn(
        ["openbox", "--sm-disable", *config, "--startup", shlex.join(["touch", str(started)])],
        env=env,
        log_path=run_dir / f"openbox-{screen}.log",
    )
    processes.supervise(f"openbox {display_name}", proc)
    conn = display.Display(display_name)
    try:
        deadline = time.monotonic() + WM_START_S
        while not (wm_running(conn) and started.exists()):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise StartFailed(
                    f"screen {screen}: the window manager (openbox) did not start "
                    f"(see {run_dir / f'openbox-{screen}.log'})"
                )
            time.sleep(0.02)
    finally:
        conn.close()
    return proc


# Text carets that blink change the screen twice a second for as long as a field has the
# focus: every poll would see a new frame, a still screen would never be still, and a fork's
# last frame would depend on the moment it was taken. GTK's setting stops the blinking in
# GTK programs and in Chromium, which takes its caret blink from GTK.
GTK_SETTINGS = "[Settings]\ngtk-cursor-blink = false\n"


def quiet_carets(home: str) -> None:
    """Turn off blinking carets for the box's programs, unless the box's home says
    otherwise already."""
    for version in ("gtk-3.0", "gtk-4.0"):
        settings = Path(home) / ".config" / version / "settings.ini"
        if not settings.exists():
            settings.parent.mkdir(parents=True, exist_ok=True)
            settings.write_text(GTK_SETTINGS)


# F7 asks, in a modal dialog of Chromium's, whether to turn caret browsing on; with this
# preference it turns it on (and off) without asking, as a person who ticked "Don't ask
# me again" has it. The dialog took the keyboard until answered.
CARET_DIALOG = ("settings", "a11y", "caretbrowsing", "show_dialog")


def no_caret_dialog(profile: Path) -> None:
    """Set the profile's preference for F7's dialog to off, unless the profile sets it."""
    path = profile / "Default" / "Preferences"
    try:
        prefs = json.loads(path.read_text())
    except FileNotFoundError:
        prefs = {}
    except ValueError:
        # Chromium's own file, unreadable: Chromium will deal with it as it does.
        return
    if not isinstance(prefs, dict):
        return
    here = prefs
    for key in CARET_DIALOG[:-1]:
        here = here.setdefault(key, {})
        if not isinstance(here, dict):
            return
    if CARET_DIALOG[-1] in here:
        return
    here[CARET_DIALOG[-1]] = False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(prefs))


def start_chromium(
    screen: int,
    home: str,
    run_dir: Path,
    env: dict[str, str],
    *,
    accessibility: bool = False,
    extra_flags: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    quiet_carets(home)
    profile = chromium_profile(home, screen)
    profile.mkdir(parents=True, exist_ok=True)
    no_caret_dialog(profile)
    # A port file left by an earlier run would name a port nobody listens on.
    (profile / "DevToolsActivePort").unlink(missing_ok=True)
    proc = processes.spawn(
        [*chromium_argv(home, screen, accessibility, extra_flags), "about:blank"],
        env=env,
        cwd=home,
        log_path=run_dir / f"chromium-{screen}.log",
    )
    processes.supervise(f"chromium (screen {screen})", proc)
    return proc


def wait_chromium(
    screen: int,
    display_name: str,
    home: str,
    proc: subprocess.Popen[bytes],
    run_dir: Path,
) -> int:
    """Wait for Chromium's DevTools port and for its window to be mapped and drawn; return
    the port."""
    port_file = chromium_profile(home, screen) / "DevToolsActivePort"
    log_file = run_dir / f"chromium-{screen}.log"
    deadline = time.monotonic() + CHROMIUM_START_S
    port: int | None = None
    conn = display.Display(display_name)
    try:
        while True:
            if port is None:
                port = read_devtools_port(port_file)
            windows = [
                w
                for w in client_windows(conn)
                if w.class_.lower() == "chromium" and w.map_state == X.IsViewable
            ]
            drawn = any(_drawn(conn, w) for w in windows)
            if port is not None and drawn:
                return port
            if proc.poll() is not None:
                raise StartFailed(
                    f"screen {screen}: chromium ended with {proc.returncode} (see {log_file})"
                )
            if time.monotonic() > deadline:
                missing = (
                    "no DevTools port"
                    if port is None
                    else "its window was not drawn"
                    if windows
                    else "its window was not mapped"
                )
                raise StartFailed(
                    f"screen {screen}: chromium did not come up within "
                    f"{CHROMIUM_START_S:.0f} s: {missing} (see {log_file})"
                )
            time.sleep(0.05)
    finally:
        conn.close()


# How many rows at the top of Chromium's window tell whether it has been drawn: its tab strip.
DRAWN_ROWS = 40


def _drawn(conn: display.Display, window: ClientWindow) -> bool:
    """Whether Chromium has drawn its window: a new one shows one plain colour (the window's
    background) for a second or two after it is mapped, before the tab strip and toolbar
    appear. A box is ready only once they have: until then, every capture is a picture of
    that moment, and a run that never touches the screen (commands only) would end on one
    picture or the other depending on how fast it ran, so its forks would not end on its
    pixels."""
    rows = min(window.height, DRAWN_ROWS)
    try:
        data = (
            conn.create_resource_object("window", window.id)
            .get_image(0, 0, window.width, rows, X.ZPixmap, 0xFFFFFFFF)
            .data
        )
    except XError:
        # Unmapped or resized meanwhile: look again on the next round.
        return False
    return bool(data) and data != data[:4] * (len(data) // 4)


def read_devtools_port(port_file: Path) -> int | None:
    try:
        first = port_file.read_text().splitlines()[0]
        return int(first)
    except (OSError, ValueError, IndexError):
        return None
