"""The bubblewrap command line of a local box: what the box can see and how its agent starts.

A box sees, read-only, only what a desktop needs (`/usr` and a few files of `/etc`), plus
its own writable home and run folder, a private `/tmp`, `/proc` and `/dev`. Host secrets
(`/etc/shadow`, `/root`, `/etc/ssl/private`, the repository, the state dir, other boxes)
are simply not mounted. The environment is cleared, so nothing of holmd's (its token, its
settings) reaches the box.
"""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from holm.adapters.agent.command import agent_command
from holm.adapters.local import procs
from holm.wire.spec import AppDefinition

BOX_HOME = "/home/box"
BOX_RUN = "/run/holm"
BOX_HOSTNAME = "holm-box"
AGENT_SITE = "/opt/holm/site"
AGENT_SRC = "/opt/holm/src"
# Debian's interpreter: the venv is built on it, so the venv's compiled packages load here.
AGENT_PYTHON = "/usr/bin/python3"

# `--unshare-all` less the user namespace: a user namespace maps one group only, so a
# terminal (xterm, anything that chowns its pty to group `tty`) fails in it; and since holmd
# runs as root, root in the box would be the host's root in it all the same.
UNSHARE = ("--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try")
# bwrap run by root keeps every capability in the box unless told otherwise. A box keeps
# only CAP_SETGID, which xterm needs to start its shell: root in the box can mount nothing,
# make no device, and write only what is bound writable (its home and run folder).
CAPS = ("--cap-drop", "ALL", "--cap-add", "CAP_SETGID")
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
    site_dirs: Sequence[Path] = field(default_factory=agent_code_dirs)
    holm_dir: Path = field(default_factory=holm_package_dir)


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
    )


def site_mounts(plan: SandboxPlan) -> list[tuple[Path, str]]:
    """Each site-packages folder with where the box sees it."""
    return [(d, AGENT_SITE if i == 0 else f"{AGENT_SITE}{i}") for i, d in enumerate(plan.site_dirs)]


def box_env(plan: SandboxPlan) -> dict[str, str]:
    python_path = [AGENT_SRC, *(inside for _, inside in site_mounts(plan))]
    return {
        "HOME": BOX_HOME,
        "USER": "root",
        "LOGNAME": "root",
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "PYTHONPATH": ":".join(python_path),
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def bwrap_argv(plan: SandboxPlan, command: Sequence[str] | None = None) -> list[str]:
    """The whole `bwrap …` command; `command` replaces the agent (tests run plain
    processes in the same sandbox)."""
    argv = ["bwrap", *UNSHARE]
    if not plan.network:
        argv.append("--unshare-net")
    argv += [*CAPS, "--new-session", "--hostname", BOX_HOSTNAME]
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
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    argv += ["--bind", str(plan.home), BOX_HOME, "--bind", str(plan.run_dir), BOX_RUN]
    for host_dir, inside in site_mounts(plan):
        argv += ["--ro-bind", str(host_dir), inside]
    argv += ["--ro-bind", str(plan.holm_dir), f"{AGENT_SRC}/holm"]
    argv.append("--clearenv")
    for name, value in box_env(plan).items():
        argv += ["--setenv", name, value]
    argv += ["--chdir", BOX_HOME, "--"]
    argv += list(command) if command is not None else agent_argv(plan)
    return argv


class Launched(NamedTuple):
    process: subprocess.Popen[bytes]
    # The sandbox's pid-namespace init on the host, by pid and start time.
    init_pid: int
    init_start: int


class LaunchFailed(Exception):
    pass


def launch(argv: Sequence[str], log_path: Path) -> Launched:
    """Start `argv` (a `bwrap` command, perhaps behind `limits.joining_argv`) detached
    from holmd: its own session, no tie to holmd's life, output to `log_path`. Blocks
    until bwrap has named its namespace init."""
    info_read, info_write = os.pipe()
    argv = list(argv)
    at = argv.index("bwrap") + 1
    argv[at:at] = ["--info-fd", str(info_write)]
    try:
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=(info_write,),
            )
    finally:
        os.close(info_write)
    try:
        with os.fdopen(info_read, "rb") as info:
            # bwrap writes the JSON then closes its end, so EOF comes when it is whole.
            raw = info.read()
        init_pid = int(json.loads(raw)["child-pid"])
    except (ValueError, KeyError):
        process.wait()
        raise LaunchFailed(f"bwrap ended with {process.returncode} before starting") from None
    stat = procs.read_stat(init_pid)
    if stat is None:
        process.wait()
        raise LaunchFailed(f"bwrap ended with {process.returncode} right after starting")
    return Launched(process, init_pid, stat.start)
