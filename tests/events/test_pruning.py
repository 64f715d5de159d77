"""A prune by age drops a trace's entries one by one from its start, keeping what a box's
state is folded from: both stores read, count and go on across the cut, and the local
store keeps it across a restart, a torn line and a crash mid-prune."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Collection, Iterable
from pathlib import Path

from holm.engine.journal import Journal
from holm.events import LocalStore, MemoryStore, TraceStore
from holm.events.codec import SPILL_BYTES
from holm.projections.box_state import borne
from holm.projections.events_feed import EventsFeed
from holm.wire.entries import BoxCreated, BoxReady, Entry, TakeoverStarted

from .conftest import (
    DAY_MS,
    acted,
    created,
    executed,
    frame_seen,
    keep_box_state,
    now_ms,
    paused,
)

KEEP_MS = 7 * DAY_MS
MINUTE_MS = 60_000
COUNT = 30


def keep_created(trace: str, old: Iterable[Entry]) -> Collection[int]:
    return {entry.seq for entry in old if isinstance(entry, BoxCreated)}


async def minute_by_minute(store: TraceStore, start_ms: int) -> None:
    """box_created, then COUNT steps a minute apart after it."""
    await store.append("box_1", [created(at_ms=start_ms)])
    for minute in range(1, COUNT + 1):
        await store.append("box_1", [acted(f"step {minute}", at_ms=start_ms + minute * MINUTE_MS)])


async def test_a_trace_is_pruned_one_entry_at_a_time(store: TraceStore) -> None:
    start = now_ms() - KEEP_MS
    await minute_by_minute(store, start)

    for first in range(2, COUNT + 1):
        # Steps 1 to first - 1 are now older than the entries are kept.
        report = await store.prune(start + KEEP_MS + (first - 1) * MINUTE_MS + 1, keep_created)

        assert (report.entries, report.boxes) == (1, 0)
        seqs = [entry.seq for entry in await store.read("box_1")]
        assert seqs == [0, *range(first, COUNT + 1)]
        info = await store.info("box_1")
        assert info is not None
        assert (info.entries, info.first_seq, info.max_seq) == (len(seqs), first, COUNT)
        assert info.first_at_ms == start
        assert await store.max_seq("box_1") == COUNT

    assert [e.seq for e in await store.append("box_1", [paused()])] == [COUNT + 1]


async def test_reads_go_across_the_cut(store: TraceStore) -> None:
    start = now_ms() - KEEP_MS
    await minute_by_minute(store, start)
    await store.prune(start + KEEP_MS + 10 * MINUTE_MS + 1, keep_created)  # steps 1 to 10 go

    async def seqs(after: int | None, limit: int) -> list[int]:
        return [entry.seq for entry in await store.read("box_1", after, limit)]

    assert await seqs(None, 3) == [0, 11, 12]
    assert await seqs(0, 2) == [11, 12]
    assert await seqs(4, 2) == [11, 12]  # after a seq that was pruned
    assert await seqs(-5, 1) == [0]
    assert await seqs(COUNT - 1, 10) == [COUNT]
    assert await seqs(COUNT, 10) == []
    assert await seqs(0, 0) == []


async def test_what_a_box_state_needs_outlives_the_steps_around_it(store: TraceStore) -> None:
    start = now_ms() - KEEP_MS
    await store.append("box_1", [created(at_ms=start)])
    await store.append(
        "box_1",
        [
            BoxReady(seq=-1, at_ms=start + 1, actor="system", viewer_urls=["http://v"]),
            frame_seen("px:1", at_ms=start + 2),
            acted(at_ms=start + 3),
            executed(at_ms=start + 4),
            frame_seen("px:2", at_ms=start + 5),
            TakeoverStarted(seq=-1, at_ms=start + 6, actor="person", screen=0, shared=False),
        ],
    )
    await store.append("box_1", [acted(at_ms=start + 2 * KEEP_MS)])

    report = await store.prune(start + KEEP_MS + 100, keep_box_state)

    # Dropped: the first frame (the second is the screen's last), the step and the command
    # (the takeover, a person's, is the last use). Kept just before the cut, the last frame
    # and the takeover count as where the trace begins.
    assert report.entries == 3
    assert [entry.seq for entry in await store.read("box_1")] == [0, 1, 5, 6, 7]
    info = await store.info("box_1")
    assert info is not None and (info.entries, info.first_seq, info.max_seq) == (5, 5, 7)


async def test_a_trace_with_nothing_new_still_goes_whole(store: TraceStore) -> None:
    start = now_ms() - 2 * KEEP_MS
    await minute_by_minute(store, start)

    report = await store.prune(now_ms(), keep_box_state)

    assert (report.entries, report.boxes) == (COUNT + 1, 1)
    assert await store.info("box_1") is None


async def test_appends_during_a_prune_are_all_kept(store: TraceStore) -> None:
    start = now_ms() - KEEP_MS
    await minute_by_minute(store, start)
    late = now_ms()

    async def append(i: int) -> list[Entry]:
        return await store.append("box_1", [acted(f"late {i}", at_ms=late), paused(at_ms=late)])

    results = await asyncio.gather(
        *(append(i) for i in range(10)),
        store.prune(start + KEEP_MS + 20 * MINUTE_MS + 1, keep_created),
        *(append(i) for i in range(10, 20)),
    )

    appended = sorted(entry.seq for batch in results[:10] + results[11:] for entry in batch)
    assert appended == list(range(COUNT + 1, COUNT + 41))
    read = await store.read("box_1", limit=1_000)
    assert [entry.seq for entry in read] == [0, *range(21, COUNT + 41)]
    assert sum(1 for entry in read if entry.at_ms == late) == 40


async def test_a_restart_folds_a_pruned_trace_to_the_same_box_state(tmp_path: Path) -> None:
    start = now_ms() - KEEP_MS
    store = LocalStore(tmp_path)
    journal = Journal(store, EventsFeed())
    await journal.append("box_1", [created(at_ms=start)])
    await journal.append(
        "box_1", [BoxReady(seq=-1, at_ms=start + 1, actor="system", viewer_urls=["http://v"])]
    )
    for minute in range(1, COUNT + 1):
        at = start + minute * MINUTE_MS
        await journal.append("box_1", [acted(at_ms=at), frame_seen(f"px:{minute}", at_ms=at)])
    live = journal.state("box_1")

    report = await store.prune(start + KEEP_MS + COUNT * MINUTE_MS // 2, journal.keep)
    await store.close()

    assert report.entries > COUNT / 2
    reopened = LocalStore(tmp_path)
    again = Journal(reopened, EventsFeed())
    await again.rebuild()
    assert borne(again.state("box_1")) == borne(live)
    info = await reopened.info("box_1")
    assert info is not None and info.entries == 2 + 2 * COUNT - report.entries
    await reopened.close()


async def test_the_memory_store_folds_a_pruned_trace_to_the_same_box_state() -> None:
    start = now_ms() - KEEP_MS
    store = MemoryStore()
    journal = Journal(store, EventsFeed())
    await journal.append("box_1", [created(at_ms=start)])
    for minute in range(1, COUNT + 1):
        at = start + minute * MINUTE_MS
        await journal.append("box_1", [frame_seen(f"px:{minute}", at_ms=at), acted(at_ms=at)])

    await store.prune(start + KEEP_MS + COUNT * MINUTE_MS // 2, journal.keep)

    again = Journal(store, EventsFeed())
    await again.rebuild()
    assert borne(again.state("box_1")) == borne(journal.state("box_1"))


async def test_a_torn_line_after_a_prune_is_cut_and_the_trace_goes_on(tmp_path: Path) -> None:
    start = now_ms() - KEEP_MS
    store = LocalStore(tmp_path)
    await minute_by_minute(store, start)
    await store.prune(start + KEEP_MS + 10 * MINUTE_MS + 1, keep_created)
    await store.close()
    jsonl = tmp_path / "traces" / "box_1.jsonl"
    with jsonl.open("ab") as file:
        file.write(b'{"kind":"box_paused","seq":31,"at')

    store = LocalStore(tmp_path)
    try:
        info = await store.info("box_1")
        assert info is not None
        assert (info.incomplete, info.first_seq, info.max_seq) == (True, 11, COUNT)
        assert [e.seq for e in await store.read("box_1", after=COUNT - 2)] == [COUNT - 1, COUNT]
        assert [e.seq for e in await store.append("box_1", [paused()])] == [COUNT + 1]
        assert [e.seq for e in await store.read("box_1", limit=2)] == [0, 11]
    finally:
        await store.close()


async def test_a_crash_mid_prune_leaves_the_old_file_whole(tmp_path: Path) -> None:
    start = now_ms() - KEEP_MS
    store = LocalStore(tmp_path)
    await minute_by_minute(store, start)
    await store.close()
    traces = tmp_path / "traces"
    # What a prune killed while writing its copy leaves: half a copy, and no index.
    (traces / ".box_1.pruned").write_bytes((traces / "box_1.jsonl").read_bytes()[:700])
    (traces / "box_1.idx").unlink()

    store = LocalStore(tmp_path)
    try:
        assert [e.seq for e in await store.read("box_1")] == list(range(COUNT + 1))
        await store.prune(start + KEEP_MS + 10 * MINUTE_MS + 1, keep_created)
        assert not (traces / ".box_1.pruned").exists()
        assert [e.seq for e in await store.read("box_1", limit=2)] == [0, 11]
    finally:
        await store.close()


async def test_the_blobs_of_pruned_entries_go_with_them(tmp_path: Path) -> None:
    start = now_ms() - KEEP_MS
    store = LocalStore(tmp_path, keep_entries_secs=KEEP_MS // 1000)
    await store.append("box_1", [created(at_ms=start)])
    await store.append("box_1", [executed(stdout="a" * (SPILL_BYTES + 1), at_ms=start + 1)])
    await store.append("box_1", [executed(stdout="b" * (SPILL_BYTES + 1), at_ms=now_ms())])
    blobs = list((tmp_path / "blobs").glob("*/*"))
    assert len(blobs) == 2
    for blob in blobs:  # both written as long ago as their entries
        os.utime(blob, ns=(start * 1_000_000, start * 1_000_000))

    # Only the blob a kept line names stays.
    report = await store.prune(now_ms(), keep_created)

    assert report.entries == 1
    assert sum(blob.exists() for blob in blobs) == 1
    read = await store.read("box_1")
    assert [entry.seq for entry in read] == [0, 2]
    assert read[1].stdout == "b" * (SPILL_BYTES + 1)  # type: ignore[union-attr]
    await store.close()
