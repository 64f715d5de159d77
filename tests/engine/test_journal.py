"""The journal: concurrent appends to one trace keep contiguous seqs in the order they were
queued, are folded into the box state, and a failing store answers `unavailable`."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from engine_kit import trace_of

from holm.engine import Engine
from holm.engine.journal import Journal, entry
from holm.errors import Unavailable
from holm.events import MemoryStore
from holm.projections.box_state import fold
from holm.projections.events_feed import EventsFeed
from holm.wire.entries import Entry, FileRead, TakeoverStarted
from holm.wire.spec import Placement, Spec


async def test_concurrent_appends_are_contiguous_and_folded(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())

    async def read(n: int) -> list[Entry]:
        return await engine.journal.append(
            box.id, [entry(FileRead, "agent", path=f"/f{n}", bytes=n)]
        )

    results = await asyncio.gather(*(read(n) for n in range(200)))
    entries = await trace_of(engine, box.id)
    assert [e.seq for e in entries] == list(range(len(entries)))
    # Each append got back the entry it queued, with the seq the store gave it.
    for n, (written,) in enumerate(results):
        assert isinstance(written, FileRead) and written.path == f"/f{n}"
        assert entries[written.seq] == written
    # Queued in order, written in order.
    reads = [e.path for e in entries if isinstance(e, FileRead)]
    assert reads == [f"/f{n}" for n in range(200)]
    # The live state equals the state folded from scratch.
    all_entries = await engine.store.read(box.id, None, 10_000)
    assert await engine.box(box.id) == fold(all_entries)


class BrokenStore(MemoryStore):
    async def append(self, trace: str, entries: Sequence[Entry]) -> list[Entry]:
        raise OSError(28, "No space left on device")


async def test_a_failing_store_answers_unavailable() -> None:
    journal = Journal(BrokenStore(), EventsFeed())
    with pytest.raises(Unavailable, match="No space left"):
        await journal.append("box_x", [entry(FileRead, "agent", path="/a", bytes=1)])
    assert journal.state("box_x") is None


async def test_the_state_ahead_includes_what_is_queued(engine: Engine) -> None:
    """An entry built from the state while a takeover waits to be written comes after the
    takeover: its fields must agree with it (the frame watcher's actor)."""
    box = await engine.create_box(Spec(), Placement())
    queued = engine.journal.submit(box.id, [entry(TakeoverStarted, "person", screen=0)])
    lagging, ahead = engine.journal.state(box.id), engine.journal.state_ahead(box.id)
    assert lagging is not None and lagging.held_by == ("agent",)
    assert ahead is not None and ahead.held_by == ("person",)
    await queued
    assert engine.journal.state(box.id) == engine.journal.state_ahead(box.id)
    assert (await engine.box(box.id)).held_by == ("person",)
