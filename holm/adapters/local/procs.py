"""The processes of a box, read from /proc, and the signals that pause, resume and end them.

A box is the process tree under its pid-namespace init (the inner `bwrap`): every process
the box starts descends from it, because an orphan inside the namespace is re-parented to
it. A pid alone can be reused, so a box's init is known by its pid *and* its start time.

Everything here blocks (it reads /proc, it sleeps while processes stop or end): call it
from a thread.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from typing import NamedTuple

# Processes in these states are gone for our purpose: a zombie waits only to be reaped.
DEAD_STATES = frozenset("ZXx")
STOPPED_STATES = frozenset("Tt")
POLL_S = 0.01
# How long the kernel may take to kill a namespace once its init died.
KILL_WAIT_S = 10.0


class ProcStat(NamedTuple):
    pid: int
    ppid: int
    state: str
    # Clock ticks since boot: with the pid, it names one process for its whole life.
    start: int


def read_stat(pid: int) -> ProcStat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name is in parentheses and may itself hold spaces and parentheses.
    fields = raw[raw.rindex(")") + 2 :].split()
    return ProcStat(pid=pid, ppid=int(fields[1]), state=fields[0], start=int(fields[19]))


def is_alive(pid: int, start: int) -> bool:
    stat = read_stat(pid)
    return stat is not None and stat.start == start and stat.state not in DEAD_STATES


def all_stats() -> list[ProcStat]:
    stats = []
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := read_stat(int(name))) is not None:
            stats.append(stat)
    return stats


def tree(root: int, start: int) -> list[int]:
    """`root` and all its live descendants, parents before children; empty when `root`
    is not that process any more."""
    if not is_alive(root, start):
        return []
    children: dict[int, list[int]] = {}
    for stat in all_stats():
        if stat.state not in DEAD_STATES:
            children.setdefault(stat.ppid, []).append(stat.pid)
    order = [root]
    for pid in order:
        order.extend(children.get(pid, ()))
    return order


def send(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def is_stopped(pid: int) -> bool:
    stat = read_stat(pid)
    return stat is not None and stat.state in STOPPED_STATES


def freeze(root: int, start: int, settle_s: float = 5.0) -> None:
    """SIGSTOP the whole tree, parents first, again until no new process shows up (a
    process can fork between the listing and its parent's stop), then wait until every
    process is really stopped."""
    stopped: set[int] = set()
    while True:
        fresh = [pid for pid in tree(root, start) if pid not in stopped]
        if not fresh:
            break
        send(fresh, signal.SIGSTOP)
        stopped.update(fresh)
    deadline = time.monotonic() + settle_s
    while time.monotonic() < deadline:
        if all(is_stopped(pid) or read_stat(pid) is None for pid in tree(root, start)):
            return
        time.sleep(POLL_S)


def thaw(root: int, start: int) -> None:
    send(tree(root, start), signal.SIGCONT)


def is_frozen(root: int, start: int) -> bool:
    return is_alive(root, start) and is_stopped(root)


def wait_gone(pids: Iterable[int], starts: dict[int, int], timeout_s: float) -> bool:
    """Whether every one of `pids` ended within `timeout_s`."""
    left = list(pids)
    deadline = time.monotonic() + timeout_s
    while True:
        left = [pid for pid in left if is_alive(pid, starts[pid])]
        if not left:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)


def end(root: int, start: int, grace_s: float) -> None:
    """End the tree: SIGTERM to the namespace init's children (the agent), which shuts its
    desktop down in order (a recording ends its file before the X server goes), then
    SIGKILL to the init, which makes the kernel kill every process left in the namespace."""
    pids = tree(root, start)
    if not pids:
        return
    stats = [stat for pid in pids if (stat := read_stat(pid)) is not None]
    starts = {stat.pid: stat.start for stat in stats}
    starts[root] = start
    # Not every process at once: an X server ended with its clients loses what they were
    # still writing (ffmpeg's last second of video).
    send([stat.pid for stat in stats if stat.ppid == root], signal.SIGTERM)
    # A paused box keeps a SIGTERM pending until it runs again.
    send(pids, signal.SIGCONT)
    if not wait_gone([root], starts, grace_s):
        send([root], signal.SIGKILL)
    wait_gone(starts, starts, KILL_WAIT_S)


def end_one(pid: int, start: int, grace_s: float) -> None:
    """End one process (not its tree): SIGTERM, then SIGKILL after `grace_s`."""
    if not is_alive(pid, start):
        return
    starts = {pid: start}
    send([pid], signal.SIGTERM)
    send([pid], signal.SIGCONT)
    if not wait_gone([pid], starts, grace_s):
        send([pid], signal.SIGKILL)
        wait_gone([pid], starts, KILL_WAIT_S)
