"""A local box's processes start at a lower CPU priority than holmd: one box's boot must
not slow every other box's requests, which holmd's one event loop serves (docs/runtimes.md,
"CPU priority").

The box's whole command runs under `nice`, and every process it starts inherits it (a box
may raise its nice, never lower it). Where holmd and the boxes are scheduled side by side
(one cgroup, as in a container, or a host without the kernel's autogroups) holmd's threads
weigh 1024 to a box process's 110. Where autogroups are on, each session is a group of its
own weighed by the group's nice, not its processes': there nice orders only a box's own
processes, and holmd sets its own session's group to nice -15 (`holmd_above_boxes`), which
weighs 29154 to each booting box session's 1024 (docs/runtimes.md says what was tried
beside it, and what each cost).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

# 10: a weight of 110 to holmd's 1024 (the kernel's nice-to-weight table).
BOX_NICE = 10
# -15: holmd's session group weighs 29154 to a box session's 1024. holmd spends little
# CPU, so the boxes lose little, but its loop gets a core when it wakes. During 16 cold
# boots at once its worst hold was 36 to 67 ms at 0, 17 to 24 at -10, 11 to 12 at -15 and
# 11 to 19 at -20 (bench/pool.py --burst 16, docs/runtimes.md).
HOLMD_GROUP_NICE = -15

AUTOGROUPS = Path("/proc/sys/kernel/sched_autogroup_enabled")
OWN_GROUP = Path("/proc/self/autogroup")


def at_box_priority(argv: Sequence[str]) -> list[str]:
    """`argv` started at the boxes' CPU priority (inherited by all it starts)."""
    return ["nice", "-n", str(BOX_NICE), *argv]


def _group_nice() -> int | None:
    """This process's session group's nice ("/autogroup-N nice K"), None without autogroups."""
    try:
        if AUTOGROUPS.read_text().strip() != "1":
            return None
        return int(OWN_GROUP.read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def holmd_above_boxes() -> Iterator[None]:
    """While inside: this process's session group at HOLMD_GROUP_NICE, where the kernel's
    autogroups are on and it may (CAP_SYS_NICE or RLIMIT_NICE). A holmd that does not lead
    its session (started from a shell) shares the group with the session's other programs,
    so it puts the nice back as it was on the way out; holmd's own session (systemd,
    setsid) ends with it anyway."""
    before = _group_nice()
    changed = before is not None and before > HOLMD_GROUP_NICE and _set_group_nice(before)
    try:
        yield
    finally:
        if changed and os.getsid(0) != os.getpid():
            with contextlib.suppress(OSError):
                OWN_GROUP.write_text(str(before))


def _set_group_nice(before: int) -> bool:
    try:
        OWN_GROUP.write_text(str(HOLMD_GROUP_NICE))
    except OSError as exc:
        log.info("holmd's session stays at nice %d beside the boxes' (%s)", before, exc)
        return False
    return True
