"""What a process holds open, as /proc names it."""

from __future__ import annotations

import contextlib
import os


def held_open(pid: int, kind: str) -> set[str]:
    """The descriptors of `pid` open on a `kind` (`pipe`, `net`, …), as /proc names them
    (`pipe:[inode]`); one closed while they are read is left out."""
    held = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith(f"{kind}:"):
                held.add(target)
    return held
