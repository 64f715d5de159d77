"""Which host ids a local box's user namespace maps to: a range of its own per box.

The kernel counts some things per host uid, and no namespace splits those counts: inotify
instances and watches (`fs.inotify.max_user_instances`, 128 by default), the user
namespaces a uid made (`user.max_user_namespaces`), queued signals (`RLIMIT_SIGPENDING`),
POSIX message queue bytes. Boxes that shared one uid shared those counts, so one box that
took them all left none to the others (and to a new box's own start). Each box therefore
maps its ids 0…65535 to a range of the host's that no other box of the host runs as.

A box keeps its range for its life (its record says it), so a persistent home keeps its
owner from one start to the next. A box recorded before boxes had ranges of their own has
the first one, `BOX_UID`, which new boxes are given only when no box uses it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

# The host uid (and gid) of root in the first box, the first of BOX_ID_COUNT: past the
# ranges that useradd, /etc/subuid and systemd's containers give out (systemd's end at
# 0x6FFFFFFF), so no account of the host owns them.
BOX_UID = 0x70000000
BOX_ID_COUNT = 65536
# How many ranges there are: they end at 0x7FFFFFFF, so every id stays a positive
# signed 32-bit number for the tools that read it so.
BOX_ID_RANGES = 4096


def range_of(uid: int) -> int | None:
    """The index of the box range that holds host id `uid`, if any."""
    index, _ = divmod(uid - BOX_UID, BOX_ID_COUNT)
    return index if uid >= BOX_UID and index < BOX_ID_RANGES else None


def pick_box_uid(taken: Iterable[int]) -> int | None:
    """The first id of the lowest box range that holds none of the host ids `taken`."""
    busy = {index for uid in taken if (index := range_of(uid)) is not None}
    for index in range(BOX_ID_RANGES):
        if index not in busy:
            return BOX_UID + index * BOX_ID_COUNT
    return None


def host_process_uids() -> set[int]:
    """The real uid of every process of the host that holmd can see, boxes of other
    servers (other state dirs) included: their ranges are in use, though no record here
    names them."""
    uids = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        # A process that ends while it is read is simply not counted.
        with contextlib.suppress(OSError), open(f"/proc/{entry.name}/status") as status:
            for line in status:
                if line.startswith("Uid:"):
                    uids.add(int(line.split()[1]))
                    break
    return uids


def free_box_uid(recorded: Iterable[int]) -> int | None:
    """A range for a new box: none of the `recorded` boxes' (running or not: a stopped
    box's home belongs to its range) and none that a process of the host runs as."""
    return pick_box_uid([*recorded, *host_process_uids()])
