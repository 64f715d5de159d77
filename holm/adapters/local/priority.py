"""A local box's processes start at a lower CPU priority than holmd: one box's boot must
not slow every other box's requests, which holmd's one event loop serves (docs/runtimes.md,
"CPU priority").

The box's whole command runs under `nice`, and every process it starts inherits it (a box
may raise its nice, never lower it). Where holmd and the boxes are scheduled side by side
(one cgroup, as in a container, or a host without the kernel's autogroups) holmd's threads
weigh 1024 to a box process's 110. Where autogroups are on, each session is a group of its
own weighed by the group's nice, not its processes': there nice orders only a box's own
processes (docs/runtimes.md says what was tried beyond it, and what it cost).
"""

from __future__ import annotations

from collections.abc import Sequence

# 10: a weight of 110 to holmd's 1024 (the kernel's nice-to-weight table).
BOX_NICE = 10


def at_box_priority(argv: Sequence[str]) -> list[str]:
    """`argv` started at the boxes' CPU priority (inherited by all it starts)."""
    return ["nice", "-n", str(BOX_NICE), *argv]
