"""The local runtime's estimate of the room for boxes (room.py), on figures of a host made
up to put each limit first, and on this host's own figures."""

from __future__ import annotations

import os

import pytest

from holm.adapters.local import room as room_of
from holm.adapters.local.room import BoxCosts, Host

MIB = 1 << 20
ROOMY = Host(
    memory_available=64 << 30, open_fds=100, fd_limit=1 << 20, tasks=500, task_limit=1 << 22
)
COSTS = BoxCosts(memory=200 * MIB, fds=20, tasks=400)


def room(host: Host = ROOMY, **counts: int) -> room_of.Room:
    settings = {"running": 0, "starting": 0, "free_displays": 200, "screens": 1, **counts}
    max_boxes = settings.pop("max_boxes", None)
    return room_of.room(host, COSTS, max_boxes=max_boxes, **settings)


@pytest.mark.parametrize(
    ("host", "limit", "left", "named"),
    [
        (ROOMY._replace(memory_available=512 * MIB + 3 * 200 * MIB), "memory", 3, "memory: "),
        (ROOMY._replace(open_fds=(1 << 20) - 256 - 2 * 20), "file_descriptors", 2, "holmd has"),
        (ROOMY._replace(tasks=(1 << 22) - 1024 - 5 * 400), "pids", 5, "tasks run of"),
    ],
)
def test_the_limit_that_runs_out_first_is_the_one_named(
    host: Host, limit: str, left: int, named: str
) -> None:
    found = room(host)
    assert (found.limit, found.boxes, found.by[limit]) == (limit, left, left)
    # Boxes being made have not taken their share yet: each counts against what is left.
    assert room(host, running=1, starting=1).boxes == left - 1
    full = room(host, running=left, starting=left)
    assert full.boxes == 0
    assert named in room_of.refusal(full, host, COSTS, None)


def test_max_boxes_and_displays() -> None:
    assert room(max_boxes=3, running=1).by["max_boxes"] == 2
    capped = room(max_boxes=3, running=3)
    assert (capped.limit, capped.boxes) == ("max_boxes", 0)
    assert "HOLM_MAX_BOXES is 3" in room_of.refusal(capped, ROOMY, COSTS, 3)
    # Four free display numbers hold two boxes of two screens.
    two_screens = room(free_displays=4, screens=2)
    assert (two_screens.limit, two_screens.boxes) == ("displays", 2)
    assert "max_boxes" not in room().by


def test_this_host_s_figures_are_read() -> None:
    host = room_of.read_host()
    assert host.memory_available > 0 and 0 < host.open_fds < host.fd_limit
    assert 0 < host.tasks < host.task_limit
    assumed = room_of.measure([], host.open_fds, host.open_fds)
    assert assumed == BoxCosts(
        room_of.ASSUMED_BOX_MEMORY, room_of.ASSUMED_BOX_FDS, room_of.ASSUMED_BOX_TASKS
    )
    # This process measured as if it were a box: its PSS and its threads.
    mine = room_of.measure([[os.getpid()]], host.open_fds, host.open_fds)
    assert 1 * MIB < mine.memory < 4 << 30 and mine.tasks >= 1
