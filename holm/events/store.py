"""The one interface every trace store implements (memory, local and postgres).

A trace is identified by a string (a box ID, or `SERVER_TRACE`). Its entries have `seq`
0, 1, 2, … with no gap, given by the store on append; a prune by age drops old ones but
never changes a seq (pruning.py). Frames are PNGs kept per trace under their pixel hash.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import msgspec

from holm.events.pruning import KeepEntries, keep_none
from holm.wire.api import PruneReport
from holm.wire.entries import PAGE_MAX, Entry


class TraceInfo(msgspec.Struct, kw_only=True):
    trace: str
    # Entries kept now (retention may have dropped the oldest) and the last seq given.
    entries: int
    max_seq: int
    # Where the trace begins now: every entry from this seq on is kept. Before it a prune
    # kept only what its policy named (a box's state-bearing entries), or nothing.
    first_seq: int = 0
    first_at_ms: int | None = None
    last_at_ms: int | None = None
    # A writer died mid-line: the torn line was dropped; cleared by the next clean append.
    incomplete: bool = False


class TraceStore(Protocol):
    async def append(self, trace: str, entries: Sequence[Entry]) -> list[Entry]:
        """Give each entry the next seq of its trace, make them durable (for a durable
        store: flushed and fsynced, concurrent appends sharing one fsync), and return them
        with their seq. All of one call land together, in order, with contiguous seqs."""
        ...

    async def read(
        self, trace: str, after: int | None = None, limit: int = PAGE_MAX
    ) -> list[Entry]:
        """Entries with seq > after (all when None), oldest first, at most `limit`.
        Values spilled to blobs are resolved. An unknown trace reads as empty."""
        ...

    async def max_seq(self, trace: str) -> int:
        """The last seq given in this trace, -1 when it has none."""
        ...

    async def info(self, trace: str) -> TraceInfo | None: ...

    async def traces(self) -> list[TraceInfo]: ...

    async def put_frame(self, trace: str, frame_hash: str, png: bytes) -> None: ...

    async def get_frame(self, trace: str, frame_hash: str) -> bytes | None: ...

    async def prune(self, now_ms: int, keep: KeepEntries = keep_none) -> PruneReport:
        """Drop frames older than the frame retention; every trace whose last entry is
        older than the entry retention, whole (counted in `boxes`); and of every other
        trace, its old prefix (pruning.py) but for the seqs `keep` names. `entries` counts
        the entries dropped. Appends that arrive meanwhile wait and are kept."""
        ...

    async def close(self) -> None: ...


__all__ = ["PAGE_MAX", "PruneReport", "TraceInfo", "TraceStore"]
