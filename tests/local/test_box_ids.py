"""Which host ids a local box maps to (box_ids.py): a range of its own per box."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from holm.adapters.local.box_ids import (
    BOX_ID_COUNT,
    BOX_ID_RANGES,
    BOX_UID,
    free_box_uid,
    pick_box_uid,
    range_of,
)


def test_a_range_holds_its_first_and_last_id_and_nothing_around_them() -> None:
    assert range_of(BOX_UID) == 0
    assert range_of(BOX_UID + BOX_ID_COUNT - 1) == 0
    assert range_of(BOX_UID + BOX_ID_COUNT) == 1
    assert range_of(BOX_UID - 1) is None
    assert range_of(0) is None
    last = BOX_UID + BOX_ID_RANGES * BOX_ID_COUNT - 1
    assert range_of(last) == BOX_ID_RANGES - 1 and last == 0x7FFFFFFF
    assert range_of(last + 1) is None


def test_the_lowest_range_that_holds_no_taken_id_is_picked() -> None:
    assert pick_box_uid([]) == BOX_UID
    # Any id of a range takes it whole, not only its first; ids of no range change nothing.
    assert pick_box_uid([BOX_UID + 1000, 0, 1000, BOX_UID - 1]) == BOX_UID + BOX_ID_COUNT
    second = BOX_UID + BOX_ID_COUNT
    assert pick_box_uid([BOX_UID, second + 5]) == BOX_UID + 2 * BOX_ID_COUNT
    assert pick_box_uid([second]) == BOX_UID
    every = [BOX_UID + i * BOX_ID_COUNT for i in range(BOX_ID_RANGES)]
    assert pick_box_uid(every) is None


def test_a_range_some_process_of_the_host_runs_as_is_not_given() -> None:
    """Another server's box (another state dir) has no record here; its processes say
    which range it holds. Other tests' boxes may run meanwhile, so the range held here is
    whichever was free."""
    held = free_box_uid([])
    assert held is not None
    # A process as an id inside that range (not its first id: one of a box's own users).
    uid = held + 1000
    setpriv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    process = subprocess.Popen([*setpriv, "sleep", "60"])
    try:
        status = Path(f"/proc/{process.pid}/status")
        deadline = time.monotonic() + 10
        while f"Uid:\t{uid}\t" not in status.read_text():
            assert time.monotonic() < deadline, "setpriv did not take the uid"
            time.sleep(0.01)
        free = free_box_uid([])
        assert free is not None and range_of(free) != range_of(held)
        # A range a record names is not given either.
        assert free_box_uid([free]) not in (held, free)
    finally:
        process.kill()
        process.wait()
