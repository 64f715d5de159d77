"""The agent's children: started here, reaped here, ended here.

The agent makes itself a child subreaper, so a process that daemonises (double forks) is
re-parented to the agent instead of init: every process of the box stays in the agent's
tree, where SIGSTOP/SIGCONT of the tree pauses and resumes the whole box, and where SIGTERM
of the agent can end it. As a subreaper (or PID 1 of a container) the agent must also reap
those orphans; processes it started itself are reaped by whoever waits for them.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

log = logging.getLogger("holm.agent")

_PR_SET_CHILD_SUBREAPER = 36
SANE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

_lock = threading.Lock()
# Pids of children that some thread waits for through their Popen; the reaper leaves them.
_waited: set[int] = set()
# Set once the agent ends the box: nothing new starts after its processes are signalled.
_ending = threading.Event()
# Children the reaper itself polls (the desktop's processes), by name for the log.
_supervised: dict[str, subprocess.Popen[bytes]] = {}


def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        log.warning("could not become a child subreaper: errno %d", ctypes.get_errno())


def box_env(
    home: str, display: str | None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a box's programs: the agent's own, without the agent's Python
    path, with the box's HOME, a sane PATH and the screen's DISPLAY."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DISPLAY")}
    env.update(HOME=home, PATH=SANE_PATH)
    env.setdefault("LANG", "C.UTF-8")
    if display is not None:
        env["DISPLAY"] = display
    if extra:
        env.update(extra)
    return env


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None = None,
    log_path: Path | None = None,
    capture: bool = False,
    pass_fds: Sequence[int] = (),
    stdio: int | None = None,
) -> subprocess.Popen[bytes]:
    """Start a child in its own process group (so its group can be signalled as one).
    With `stdio`, that descriptor is its stdin and stdout (an inetd-style server's
    connection), and its stderr goes to `log_path`."""
    opened: int | None = None
    if capture:
        out = subprocess.PIPE
    elif log_path is not None:
        out = opened = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    else:
        out = subprocess.DEVNULL
    try:
        with _lock:
            if _ending.is_set():
                raise OSError("the box is ending")
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL if stdio is None else stdio,
                stdout=out if stdio is None else stdio,
                stderr=out,
                env=dict(env),
                cwd=cwd,
                start_new_session=True,
                pass_fds=tuple(pass_fds),
            )
            _waited.add(proc.pid)
    finally:
        if opened is not None:
            os.close(opened)
    return proc


def log_tail(path: Path, size: int = 400) -> str:
    """The end of a child's log: what it said last, usually why it ended."""
    try:
        return path.read_bytes()[-size:].decode(errors="replace").strip()
    except OSError:
        return ""


def forget(proc: subprocess.Popen[bytes]) -> None:
    """The child was waited for; the reaper may reap what has its pid from now on."""
    with _lock:
        _waited.discard(proc.pid)


def _process_table() -> dict[int, tuple[int, str]]:
    """pid → (ppid, state) of every process visible in /proc."""
    found: dict[int, tuple[int, str]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        # The command name can hold spaces and parentheses: split after the last ")".
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 2:
            found[int(entry.name)] = (int(fields[1]), fields[0])
    return found


def descendants(root: int) -> list[int]:
    """Every process under `root`, parents before children."""
    by_parent: dict[int, list[int]] = {}
    for pid, (ppid, _) in _process_table().items():
        by_parent.setdefault(ppid, []).append(pid)
    order: list[int] = []
    todo = list(by_parent.get(root, []))
    while todo:
        pid = todo.pop()
        order.append(pid)
        todo.extend(by_parent.get(pid, []))
    return order


def reap_orphans() -> None:
    me = os.getpid()
    with _lock:
        zombies = [
            pid
            for pid, (ppid, state) in _process_table().items()
            if ppid == me and state == "Z" and pid not in _waited
        ]
        for pid in zombies:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


def supervise(name: str, proc: subprocess.Popen[bytes]) -> None:
    """Have the reaper wait for `proc` and log its end."""
    with _lock:
        _supervised[name] = proc


def _poll_supervised() -> None:
    with _lock:
        ended = [(n, p) for n, p in _supervised.items() if p.poll() is not None]
        for name, proc in ended:
            del _supervised[name]
            _waited.discard(proc.pid)
    for name, proc in ended:
        log.info("%s (pid %d) ended with %s", name, proc.pid, proc.returncode)


def _a_child_ended() -> bool:
    """Whether a child of the agent (its own or an orphan it adopted) has ended and waits to
    be reaped: one waitid that reaps nothing (WNOWAIT). On an idle box that is a syscall a
    tick instead of reading every process's stat in /proc, which cost each of 40 idle boxes'
    agents about a tenth of a percent of a core."""
    try:
        return os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # no child at all
        return False


def start_reaper(stop: threading.Event, every_s: float = 0.5) -> threading.Thread:
    def loop() -> None:
        while not stop.wait(every_s):
            if _a_child_ended():
                _poll_supervised()
                reap_orphans()

    thread = threading.Thread(target=loop, name="reaper", daemon=True)
    thread.start()
    return thread


def end_all(grace_s: float = 3.0) -> None:
    """SIGTERM every descendant, then SIGKILL what is left after `grace_s`."""
    with _lock:
        _ending.set()
    me = os.getpid()
    for sig in (signal.SIGCONT, signal.SIGTERM):
        for pid in descendants(me):
            _signal(pid, sig)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and _living_descendants(me):
        _poll_supervised()
        reap_orphans()
        time.sleep(0.05)
    for pid in descendants(me):
        _signal(pid, signal.SIGKILL)
    reap_orphans()


def _living_descendants(root: int) -> list[int]:
    states = _process_table()
    return [pid for pid in descendants(root) if states.get(pid, (0, "Z"))[1] != "Z"]


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)
