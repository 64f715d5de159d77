"""A local box's processes yield the CPU to holmd: one box's boot must not slow every other
box's requests.

Two things do it (docs/runtimes.md, "CPU priority"):

- every process of a box starts at nice `BOX_NICE` (the box's whole command runs under
  `nice`, and children inherit it), so where holmd and the boxes are scheduled side by
  side (one cgroup, as in a container) holmd's threads weigh about ten times a box's;
- every box has a group of the cpu controller where the host gives one (`limits.py`), so
  the boxes' processes are scheduled as groups under `holm-boxes`, not each as a group of
  its own: with the kernel's autogroups each session is a group of equal weight, and
  every process a box starts is a session, so 16 booting boxes would be a hundred groups
  to holmd's one, and nice would count only inside each of them.
"""

from __future__ import annotations

from collections.abc import Sequence

# 10: a weight of 110 to holmd's 1024 (the kernel's nice-to-weight table).
BOX_NICE = 10


def at_box_priority(argv: Sequence[str]) -> list[str]:
    """`argv` started at the boxes' CPU priority (inherited by all it starts)."""
    return ["nice", "-n", str(BOX_NICE), *argv]
