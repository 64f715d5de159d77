"""A local box's processes yield the CPU to holmd: one box's boot must not slow every other
box's requests, which holmd's one event loop serves (docs/runtimes.md, "CPU priority").

Two things do it:

- every process of a box starts at nice `BOX_NICE`: the box's whole command runs under
  `nice`, and what it starts inherits it. Where holmd and the boxes are scheduled side by
  side (one cgroup, as in a container), holmd weighs about ten times each of them.
- where the kernel's autogroups are on (`/proc/sys/kernel/sched_autogroup_enabled`), each
  session is scheduled as a group of its own, as heavy as holmd's whatever its processes'
  nice, and every program a box's agent starts is a session: 16 booting boxes were a
  hundred groups to holmd's one. While a box boots, holmd gives each of its sessions the
  autogroup nice `BOX_NICE` too (`lower_sessions`, from a thread).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from holm.adapters.local import procs

# 10: a weight of 110 to holmd's 1024 (the kernel's nice-to-weight table).
BOX_NICE = 10
AUTOGROUPS = Path("/proc/sys/kernel/sched_autogroup_enabled")


def at_box_priority(argv: Sequence[str]) -> list[str]:
    """`argv` started at the boxes' CPU priority (inherited by all it starts)."""
    return ["nice", "-n", str(BOX_NICE), *argv]


def autogroups_on() -> bool:
    try:
        return AUTOGROUPS.read_text().strip() == "1"
    except OSError:
        return False


def autogroup_nice(pid: int) -> int | None:
    """The nice of `pid`'s autogroup ("/autogroup-12 nice 0"), None when it has none."""
    try:
        return int(Path(f"/proc/{pid}/autogroup").read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def lower_sessions(init_pid: int, init_start: int, groups: Sequence[str] = ()) -> None:
    """Give every autogroup of the box's processes (each session it started so far) the
    boxes' nice. The processes are read from one of the box's cgroups (`groups`: their
    `cgroup.procs`) when it has one: walking the tree reads every process of the host,
    too dear to do for each booting box several times a second. Blocking (it reads
    /proc): call it from a thread."""
    try:
        box_ns = os.readlink(f"/proc/{init_pid}/ns/pid")
    except OSError:
        return
    for pid in _members(groups) or procs.tree(init_pid, init_start):
        nice = autogroup_nice(pid)
        if nice is not None and nice < BOX_NICE:
            # Gone meanwhile, or not ours to change (EPERM, EAGAIN): it stays as it was.
            with contextlib.suppress(OSError):
                _lower(pid, box_ns)


def _members(groups: Sequence[str]) -> list[int]:
    for group in groups:
        with contextlib.suppress(OSError, ValueError):
            return [int(pid) for pid in Path(group).read_text().split()]
    return []


def _lower(pid: int, box_ns: str) -> None:
    """Write the autogroup nice of `pid` through its /proc folder, once that folder is
    known to be a process of the box's pid namespace: a pid reused by a process of the
    host meanwhile is left alone (the folder held is the ended process's)."""
    folder = os.open(f"/proc/{pid}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if os.readlink("ns/pid", dir_fd=folder) != box_ns:
            return
        autogroup = os.open("autogroup", os.O_WRONLY | os.O_CLOEXEC, dir_fd=folder)
        try:
            os.write(autogroup, str(BOX_NICE).encode())
        finally:
            os.close(autogroup)
    finally:
        os.close(folder)
