"""How many more boxes this host can take, by the local runtime's own estimate, and which
limit refuses the next one first: `HOLM_MAX_BOXES`, memory, X display numbers, holmd's file
descriptors, the kernel's tasks. A box that does not fit is refused before anything of it
is made (runtime.py's `reserve`), with `503 unavailable`, `retryable`, and a message naming
the limit: a retry once a box is gone can succeed.

What a box takes is measured on the boxes that run (their processes' PSS and tasks, the
descriptors holmd holds beyond those it held at start), and assumed until some do.
Everything here reads /proc and blocks: call it from a thread.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from holm.wire.runtime import Room, RoomLimit

# Until a box has been measured: what a 1280×800 box with Chromium takes (bench/host.py),
# the descriptors holmd holds for one (its agent's connections, a child's pipes, a trace's
# two files), and its tasks (Chromium has a few hundred threads).
ASSUMED_BOX_MEMORY = 200 << 20
ASSUMED_BOX_FDS = 24
ASSUMED_BOX_TASKS = 400
# Left to the host whatever the boxes would like: a box that leaves less is refused.
MEMORY_RESERVE = 512 << 20
FDS_RESERVE = 256
TASKS_RESERVE = 1024


class Host(NamedTuple):
    """The host's figures now."""

    memory_available: int
    open_fds: int
    fd_limit: int
    tasks: int
    task_limit: int


class BoxCosts(NamedTuple):
    """What one box takes, measured or assumed."""

    memory: int
    fds: int
    tasks: int


def read_host() -> Host:
    return Host(
        memory_available=_meminfo("MemAvailable"),
        open_fds=len(os.listdir("/proc/self/fd")),
        fd_limit=resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        tasks=_tasks(),
        task_limit=min(
            _read_int("/proc/sys/kernel/threads-max"), _read_int("/proc/sys/kernel/pid_max")
        ),
    )


def measure(trees: Sequence[Sequence[int]], open_fds: int, fds_at_start: int) -> BoxCosts:
    """Each box's processes in `trees` (one list of pids a box): the mean of what they
    take; assumed figures where there is no box to measure."""
    if not trees:
        return BoxCosts(ASSUMED_BOX_MEMORY, ASSUMED_BOX_FDS, ASSUMED_BOX_TASKS)
    memory = sum(_pss(pids) for pids in trees) // len(trees)
    tasks = sum(_threads(pids) for pids in trees) // len(trees)
    fds = max(0, open_fds - fds_at_start) // len(trees)
    return BoxCosts(
        memory=memory or ASSUMED_BOX_MEMORY,
        fds=max(fds, 8),
        tasks=tasks or ASSUMED_BOX_TASKS,
    )


def room(
    host: Host,
    costs: BoxCosts,
    *,
    running: int,
    starting: int,
    max_boxes: int | None,
    free_displays: int,
    screens: int,
) -> Room:
    """The room for boxes of `screens` screens. `starting` of the `running` boxes are being
    made and have not taken their memory, descriptors or tasks yet."""
    by: dict[RoomLimit, int] = {
        "memory": (host.memory_available - MEMORY_RESERVE) // costs.memory - starting,
        "displays": free_displays // max(screens, 1),
        "file_descriptors": (host.fd_limit - FDS_RESERVE - host.open_fds) // costs.fds - starting,
        "pids": (host.task_limit - TASKS_RESERVE - host.tasks) // costs.tasks - starting,
    }
    if max_boxes is not None:
        by = {"max_boxes": max_boxes - running, **by}
    by = {limit: max(left, 0) for limit, left in by.items()}
    limit = min(by, key=lambda name: by[name])
    return Room(boxes=by[limit], limit=limit, running=running, by=by, box_memory_bytes=costs.memory)


def refusal(room: Room, host: Host, costs: BoxCosts, max_boxes: int | None) -> str:
    """Why the next box does not fit, naming the limit and its figures."""
    mib = 1 << 20
    match room.limit:
        case "max_boxes":
            return f"HOLM_MAX_BOXES is {max_boxes} and this runtime runs {room.running} boxes"
        case "memory":
            return (
                f"memory: {host.memory_available // mib} MiB available, a box takes about"
                f" {costs.memory // mib} MiB and {MEMORY_RESERVE // mib} MiB stay the host's"
            )
        case "displays":
            return "displays: no free X display numbers left (HOLM_LOCAL_DISPLAY_COUNT)"
        case "file_descriptors":
            return (
                f"file descriptors: holmd has {host.open_fds} open of its limit of"
                f" {host.fd_limit}, a box takes about {costs.fds}"
            )
        case "pids":
            return (
                f"pids: {host.tasks} tasks run of the kernel's {host.task_limit},"
                f" a box takes about {costs.tasks}"
            )


def _meminfo(field: str) -> int:
    with open("/proc/meminfo", encoding="ascii") as file:
        for line in file:
            name, _, value = line.partition(":")
            if name == field:
                return int(value.split()[0]) * 1024
    raise OSError(f"/proc/meminfo has no {field}")


def _read_int(path: str) -> int:
    with open(path, encoding="ascii") as file:
        return int(file.read().split()[0])


def _tasks() -> int:
    # /proc/loadavg: "0.20 0.18 0.12 1/80 11206": the 4th field's total is every task.
    with open("/proc/loadavg", encoding="ascii") as file:
        return int(file.read().split()[3].partition("/")[2])


def _pss(pids: Iterable[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as file:
                for line in file:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue  # ended meanwhile, or not ours to read
    return total


def _threads(pids: Iterable[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as file:
                raw = file.read().decode(errors="replace")
        except (FileNotFoundError, ProcessLookupError):
            continue
        # The command name is in parentheses; num_threads is the 20th field.
        total += int(raw[raw.rindex(")") + 2 :].split()[17])
    return total


__all__ = ["BoxCosts", "Host", "measure", "read_host", "refusal", "room"]
