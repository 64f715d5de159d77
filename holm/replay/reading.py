"""Reading a box's whole trace through the engine, page by page."""

from __future__ import annotations

from holm.replay.boxes import Boxes
from holm.wire.entries import PAGE_MAX, Entry


async def read_whole_trace(boxes: Boxes, box_id: str) -> list[Entry]:
    entries: list[Entry] = []
    after: int | None = None
    while True:
        page = await boxes.read_trace(box_id, after, PAGE_MAX)
        entries.extend(page.entries)
        if not page.more or not page.entries:
            return entries
        after = page.next


__all__ = ["read_whole_trace"]
