"""What the tests of several parts share to write traces by hand."""

from __future__ import annotations

from typing import Any

from holm.wire.entries import Actor, Entry

T0 = 1_790_000_000_000


class TraceBuilder:
    """Entries as an engine appends them: seq from 0, at_ms moving on by `gap_ms` (100
    unless said), actor agent unless said."""

    def __init__(self, start_ms: int = T0) -> None:
        self.entries: list[Entry] = []
        self.now = start_ms

    def add(
        self, cls: type[Any], *, gap_ms: int = 100, actor: Actor = "agent", **fields: Any
    ) -> Any:
        self.now += gap_ms
        entry = cls(seq=len(self.entries), at_ms=self.now, actor=actor, **fields)
        self.entries.append(entry)
        return entry
