"""Reading a box's whole trace through the engine, page by page."""

from __future__ import annotations

from holm.engine import Engine
from holm.events.entries import Entry
from holm.events.store import PAGE_MAX


async def read_whole_trace(engine: Engine, box_id: str) -> list[Entry]:
    entries: list[Entry] = []
    after: int | None = None
    while True:
        page = await engine.read_trace(box_id, after, PAGE_MAX)
        entries.extend(page.entries)
        if not page.more or not page.entries:
            return entries
        after = page.next


__all__ = ["read_whole_trace"]
