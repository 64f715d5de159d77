"""The command line of a local box, and its launch: what the box can see, which uid it is
on the host, which network it has, and how its agent starts.

A box sees, read-only, only what a desktop needs (`/usr` and a few files of `/etc`), plus
its own writable home and run folder, a private `/tmp`, `/proc` and `/dev`. Host secrets
(`/etc/shadow`, `/root`, `/etc/ssl/private`, the repository, the state dir, other boxes)
are simply not mounted.

Nothing of holmd reaches a box: every process of it, the sandbox's own PID 1 included,
starts from the environment `box_env` composes, never from holmd's.

A box is not root on the host. Its processes run in a user namespace of their own, where
the box's ids 0…65535 are a range of the host's of its own (`box_ids.py`), from
`SandboxPlan.box_uid` on: root in the box (with no capability but CAP_SETGID) is an
unprivileged uid on the host, and a terminal's `tty` group is mapped, so xterm works on the
box's private devpts. The box's files in its home belong to that uid on the host.

A box always has its own network namespace. Without `policy.network` it has only its own
loopback; with it, `network.py` attaches a user-mode network stack (pasta) that reaches
out the way any program of the host would, except that the host's own addresses (its
loopback, and with it holmd and every service bound there) are not reachable.

The command is two bwraps. The outer one, run by root, only stages the box's host folders
(home, run folder, the agent's code) in a private mount namespace at paths the box's uid
can reach (a state dir may well be private to root); `setpriv` then becomes the box's uid,
and the inner bwrap makes the box: the user, pid, network, ipc, uts and cgroup namespaces
and the root the box sees.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sysconfig
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NamedTuple

from holm.adapters.agent_command import agent_command
from holm.adapters.local import procs
from holm.adapters.local.box_ids import BOX_ID_COUNT, BOX_UID
from holm.adapters.local.network import Attaching, NetworkFailed
from holm.wire.spec import AppDefinition, Feature

BOX_HOME = "/home/box"
BOX_RUN = "/run/holm"
BOX_HOSTNAME = "holm-box"
AGENT_SITE = "/opt/holm/site"
AGENT_SRC = "/opt/holm/src"
# Debian's interpreter: the venv is built on it, so the venv's compiled packages load here.
AGENT_PYTHON = "/usr/bin/python3"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# The box's namespaces besides its user namespace (`--unshare-user`, always first) and
# its network namespace (always: `network.py` gives it a way out when the policy allows).
UNSHARE = ("--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try")
# Root in the box keeps only CAP_SETGID (xterm needs it to start its shell), and that only
# in the box's user namespace: it can mount nothing, make no device, configure no
# interface, and write only what is bound writable (its home and run folder).
CAPS = ("--cap-drop", "ALL", "--cap-add", "CAP_SETGID")
# A Wayland box's root keeps CAP_SETUID too, in the box's user namespace only: sway refuses
# to run as root, and the agent starts it as the box's uid 1000 (holm/agent/wayland/
# sway_up.py). Every uid it can become is one of the box's own range on the host.
WAYLAND_CAPS = (*CAPS, "--cap-add", "CAP_SETUID")
# Bound read-only into every box, when the host has them.
DESKTOP_ETC = (
    "/etc/fonts",
    "/etc/alternatives",
    "/etc/chromium.d",
    "/etc/chromium",
    "/etc/ld.so.cache",
    "/etc/X11",
    "/etc/xdg",
    "/etc/passwd",
    "/etc/group",
    "/etc/hosts",
    "/etc/mime.types",
    "/etc/localtime",
    # Not of /etc, but as harmless: the host's font cache, without which every box's
    # programs would scan all the host's fonts (the CJK ones are large) before they draw.
    "/var/cache/fontconfig",
)
# Only boxes with a network get name resolution and the CA certificates. `/etc/ssl` itself
# is not bound: it holds `private/`, the host's TLS keys.
NETWORK_ETC = (
    "/etc/resolv.conf",
    "/etc/nsswitch.conf",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
)
# Merged-/usr systems have these as symlinks into /usr; older ones as real folders.
ROOT_LINKS = ("/bin", "/lib", "/lib64", "/sbin")
# Where the outer bwrap stages the box's host folders, in its own mount namespace only:
# a private tmpfs over /tmp (world-writable: the inner bwrap makes its own root there).
STAGE = "/tmp/.holm-stage"


def agent_code_dirs() -> list[Path]:
    """The host folders the agent's imports come from: this interpreter's site-packages
    (msgspec, python-xlib, pillow) and the folder that holds the `holm` package."""
    dirs: list[Path] = []
    for key in ("purelib", "platlib"):
        site = Path(sysconfig.get_paths()[key])
        if site.is_dir() and site not in dirs:
            dirs.append(site)
    return dirs


def holm_package_dir() -> Path:
    # From this file, not `holm.__file__`: an editable install can import `holm` as a
    # namespace package, which has no `__file__`.
    return Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class SandboxPlan:
    home: Path
    run_dir: Path
    network: bool
    screens: int
    width: int
    height: int
    display_base: int
    chromium: bool = True
    apps: dict[str, AppDefinition] = field(default_factory=dict)
    features: Sequence[Feature] = ()
    site_dirs: Sequence[Path] = field(default_factory=agent_code_dirs)
    holm_dir: Path = field(default_factory=holm_package_dir)
    box_uid: int = BOX_UID
    # Whose frame key the agent hashes with (command.py).
    server_id: str | None = None
    # spec.desktop.server: the screens' display server.
    display_server: str = "x11"


def agent_argv(plan: SandboxPlan) -> list[str]:
    return agent_command(
        [AGENT_PYTHON, "-s"],
        BOX_RUN,
        screens=plan.screens,
        width=plan.width,
        height=plan.height,
        display_base=plan.display_base,
        chromium=plan.chromium,
        apps=plan.apps,
        features=plan.features,
        server_id=plan.server_id,
        display_server=plan.display_server,
    )


def site_mounts(plan: SandboxPlan) -> list[tuple[Path, str]]:
    """Each site-packages folder with where the box sees it."""
    return [(d, AGENT_SITE if i == 0 else f"{AGENT_SITE}{i}") for i, d in enumerate(plan.site_dirs)]


def box_env(plan: SandboxPlan) -> dict[str, str]:
    """The whole environment of a box, composed here: bwrap's own processes get it as
    well as the agent, so not one variable of holmd's (its token, its settings) is in
    any /proc/<pid>/environ of the box."""
    python_path = [AGENT_SRC, *(inside for _, inside in site_mounts(plan))]
    env = {
        "HOME": BOX_HOME,
        "USER": "root",
        "LOGNAME": "root",
        "PATH": PATH,
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "PYTHONPATH": ":".join(python_path),
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    # The host's zone by name, when it has one (the box sees /etc/localtime too).
    tz = _host_timezone()
    if tz is not None:
        env["TZ"] = tz
    return env


def _host_timezone() -> str | None:
    with contextlib.suppress(OSError):
        name = Path("/etc/timezone").read_text().strip()
        if name and "\n" not in name and "\0" not in name:
            return name
    return None


def staged(plan: SandboxPlan) -> list[tuple[Path, str, bool]]:
    """Each host folder the box binds, where the outer bwrap stages it, and whether the
    box may write it."""
    folders = [(plan.home, f"{STAGE}/home", True), (plan.run_dir, f"{STAGE}/run", True)]
    folders += [(d, f"{STAGE}/site{i}", False) for i, d in enumerate(plan.site_dirs)]
    folders.append((plan.holm_dir, f"{STAGE}/holm", False))
    return folders


def bwrap_argv(plan: SandboxPlan, command: Sequence[str] | None = None) -> list[str]:
    """The whole command of a box (see the module's docstring); `command` replaces the
    agent (tests run plain processes in the same sandbox)."""
    stage = staged(plan)
    argv = ["bwrap", "--dev-bind", "/", "/", "--perms", "1777", "--tmpfs", "/tmp"]
    argv += ["--perms", "0755", "--dir", STAGE]
    for host, at, writable in stage:
        argv += ["--bind" if writable else "--ro-bind", str(host), at]
    uid = plan.box_uid
    argv += ["--", "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    argv += ["bwrap", "--unshare-user", *UNSHARE, "--unshare-net"]
    caps = WAYLAND_CAPS if plan.display_server == "wayland" else CAPS
    argv += [*caps, "--new-session", "--hostname", BOX_HOSTNAME]
    # No --die-with-parent: a box outlives the holmd that started it.
    argv += ["--ro-bind", "/usr", "/usr"]
    for link in ROOT_LINKS:
        if os.path.islink(link):
            argv += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            argv += ["--ro-bind", link, link]
    etc = DESKTOP_ETC + (NETWORK_ETC if plan.network else ())
    for path in etc:
        argv += ["--ro-bind-try", path, path]
    if plan.display_server == "wayland":
        # sway runs as a uid of the box other than root (holm/agent/wayland/sway_up.py):
        # its buffers are POSIX shared memory (shm_open) and XWayland's lock files and
        # sockets go in /tmp, so the box's /tmp and /dev/shm are open to every uid of the
        # box (sticky), as a host's are.
        argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp"]
        argv += ["--perms", "1777", "--tmpfs", "/dev/shm"]
    else:
        argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    (_, home, _), (_, run, _), *code = stage
    argv += ["--bind", home, BOX_HOME, "--bind", run, BOX_RUN]
    for (_, inside), (_, at, _) in zip(site_mounts(plan), code, strict=False):
        argv += ["--ro-bind", at, inside]
    argv += ["--ro-bind", code[-1][1], f"{AGENT_SRC}/holm"]
    argv.append("--clearenv")
    for name, value in box_env(plan).items():
        argv += ["--setenv", name, value]
    argv += ["--chdir", BOX_HOME, "--"]
    argv += list(command) if command is not None else agent_argv(plan)
    return argv


def box_bwrap_at(argv: Sequence[str]) -> int:
    """Where the box's own bwrap (the inner one) starts in `argv`."""
    for i, arg in enumerate(argv[:-1]):
        if arg == "bwrap" and argv[i + 1] == "--unshare-user":
            return i
    raise ValueError("no box bwrap (`bwrap --unshare-user`) in the command")


class Launched(NamedTuple):
    process: subprocess.Popen[bytes]
    # The sandbox's pid-namespace init on the host, by pid and start time.
    init_pid: int
    init_start: int
    # The box's user-mode network stack on its way up, when it has a network.
    network: Attaching | None = None


class LaunchFailed(Exception):
    pass


def launch(
    argv: Sequence[str],
    log_path: Path,
    *,
    env: dict[str, str],
    box_uid: int = BOX_UID,
    attach_network: Callable[[int], Attaching] | None = None,
    stderr_path: Path | None = None,
) -> Launched:
    """Start `argv` (from `bwrap_argv`, perhaps behind `limits.joining_argv`) detached
    from holmd: its own session, no tie to holmd's life, environment `env` and nothing
    else, output to `log_path` (stderr to `stderr_path` when given). Blocks until the box
    is made: its user namespace mapped to `box_uid`…, its network's attachment begun by
    `attach_network(init_pid)`, and only then its first process running. The network
    comes up while the box starts: `Launched.network.wait()` says when."""
    info_read, info_write = os.pipe()
    userns_read, userns_write = os.pipe()
    block_read, block_write = os.pipe()
    argv = list(argv)
    at = box_bwrap_at(argv) + 1
    argv[at:at] = [
        "--info-fd",
        str(info_write),
        "--userns-block-fd",
        str(userns_read),
        "--block-fd",
        str(block_read),
    ]
    try:
        with contextlib.ExitStack() as files:
            log: IO[bytes] = files.enter_context(open(log_path, "ab"))
            err: IO[bytes] | int = subprocess.STDOUT
            if stderr_path is not None:
                err = files.enter_context(open(stderr_path, "ab"))
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=err,
                start_new_session=True,
                pass_fds=(info_write, userns_read, block_read),
                env=env,
                # Not holmd's folder: bwrap tells its PWD to the box's PID 1.
                cwd="/",
            )
    finally:
        for fd in (info_write, userns_read, block_read):
            os.close(fd)
    try:
        with os.fdopen(info_read, "rb") as info:
            # bwrap writes the JSON then closes its end, so EOF comes when it is whole.
            raw = info.read()
        init_pid = int(json.loads(raw)["child-pid"])
    except (ValueError, KeyError):
        os.close(userns_write)
        os.close(block_write)
        process.wait()
        raise LaunchFailed(f"bwrap ended with {process.returncode} before starting") from None
    # Until the block fd is written, the box runs nothing of its own; on any failure the
    # box is killed before that fd closes (a closed fd would let it run).
    network: Attaching | None = None
    try:
        stat = procs.read_stat(init_pid)
        if stat is None:
            raise LaunchFailed(f"bwrap ended with {process.poll()} right after starting")
        map_ids(init_pid, box_uid)
        os.write(userns_write, b"1")
        if attach_network is not None:
            network = attach_network(init_pid)
        os.write(block_write, b"1")
    except BaseException as exc:
        if network is not None:
            network.cancel()
        with contextlib.suppress(ProcessLookupError):
            os.kill(init_pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        if isinstance(exc, OSError | NetworkFailed):
            raise LaunchFailed(f"the box could not be made: {exc}") from None
        raise
    finally:
        os.close(userns_write)
        os.close(block_write)
    return Launched(process, init_pid, stat.start, network)


def map_ids(pid: int, box_uid: int) -> None:
    """The box's ids 0…65535 as the host's `box_uid`…: written by root from outside, since
    the box itself may map no more than its own one uid."""
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/{pid}/{name}", "w") as f:
            f.write(f"0 {box_uid} {BOX_ID_COUNT}\n")
