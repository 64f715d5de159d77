"""What every trace store does, run against the memory store and the local store."""

from __future__ import annotations

import asyncio
import random

import pytest

from holm.errors import BadRequest
from holm.events import TraceStore
from holm.events.codec import SPILL_BYTES
from holm.wire.entries import PAGE_MAX, Executed

from .conftest import (
    DAY_MS,
    HOUR_MS,
    acted,
    clicked,
    created,
    executed,
    frame_seen,
    keep_box_state,
    now_ms,
    paused,
)


async def test_append_gives_contiguous_seqs_from_zero_and_returns_the_entries(
    store: TraceStore,
) -> None:
    first = await store.append("box_1", [created(), paused(at_ms=2_000)])
    second = await store.append("box_1", [clicked(5, at_ms=3_000)])

    assert [entry.seq for entry in first + second] == [0, 1, 2]
    assert await store.read("box_1") == first + second
    assert await store.max_seq("box_1") == 2


async def test_read_pages_with_after_and_limit(store: TraceStore) -> None:
    await store.append("box_1", [clicked(x) for x in range(1_200)])

    page = await store.read("box_1", after=99, limit=50)
    assert [entry.seq for entry in page] == list(range(100, 150))
    assert [entry.action.at.x for entry in page] == list(range(100, 150))  # type: ignore[union-attr]
    assert len(await store.read("box_1")) == PAGE_MAX
    assert [e.seq for e in await store.read("box_1", after=1_195)] == [1_196, 1_197, 1_198, 1_199]
    assert await store.read("box_1", after=1_199) == []
    assert await store.read("box_1", after=5_000) == []
    assert await store.read("box_1", limit=0) == []
    assert [e.seq for e in await store.read("box_1", after=-1, limit=2)] == [0, 1]


async def test_an_unknown_trace_reads_as_empty(store: TraceStore) -> None:
    assert await store.read("box_none") == []
    assert await store.max_seq("box_none") == -1
    assert await store.info("box_none") is None
    assert await store.get_frame("box_none", "sha256:" + "a" * 64) is None
    assert await store.read("../../etc/passwd") == []


async def test_a_trace_name_that_cannot_be_a_file_name_is_refused(store: TraceStore) -> None:
    for name in ("../escape", "a/b", "", ".hidden"):
        with pytest.raises(BadRequest):
            await store.append(name, [paused()])
    assert await store.traces() == []


async def test_info_and_traces_describe_each_trace(store: TraceStore) -> None:
    await store.append("box_b", [created("box_b", at_ms=5_000), paused(at_ms=6_000)])
    await store.append("box_a", [created("box_a", at_ms=7_000)])

    info = await store.info("box_b")
    assert info is not None
    assert (info.trace, info.entries, info.max_seq) == ("box_b", 2, 1)
    assert (info.first_at_ms, info.last_at_ms, info.incomplete) == (5_000, 6_000, False)
    assert [(i.trace, i.entries) for i in await store.traces()] == [("box_a", 1), ("box_b", 2)]


async def test_concurrent_appends_from_many_tasks_get_contiguous_seqs(store: TraceStore) -> None:
    rng = random.Random(7)
    sizes = [rng.randint(1, 4) for _ in range(300)]

    async def append(task: int) -> None:
        trace = f"box_{task % 3}"
        entries = [clicked(task * 10 + i) for i in range(sizes[task])]
        got = await store.append(trace, entries)
        # One call's entries land together, in order.
        assert [e.seq for e in got] == list(range(got[0].seq, got[0].seq + len(entries)))

    await asyncio.gather(*(append(task) for task in range(300)))

    for trace in range(3):
        expected = sum(size for task, size in enumerate(sizes) if task % 3 == trace)
        read = await store.read(f"box_{trace}", limit=10_000)
        assert [entry.seq for entry in read] == list(range(expected))
        assert await store.max_seq(f"box_{trace}") == expected - 1


async def test_values_over_64_kb_come_back_whole(store: TraceStore) -> None:
    stdout = "".join(chr(0x41 + i % 26) for i in range(3 * SPILL_BYTES))
    nested = {"rows": ["é" * SPILL_BYTES, "small"], "n": 3}
    lookalike = {"__blob": "sha256:" + "f" * 64, "bytes": 12}
    appended = await store.append(
        "box_1",
        [executed(stdout=stdout), acted(text="t" * 2 * SPILL_BYTES, result=nested)],
    )
    appended += await store.append("box_1", [acted(result=lookalike)])
    # Still too big once its first item is out: the list goes to a blob whole.
    two_big = [["b" * (SPILL_BYTES + 5), "c" * (SPILL_BYTES - 100)]]
    appended += await store.append("box_1", [acted(result=two_big)])

    read = await store.read("box_1")
    assert read == appended
    first = read[0]
    assert isinstance(first, Executed) and first.stdout == stdout


async def test_frames_are_kept_per_trace_under_their_hash(store: TraceStore) -> None:
    await store.put_frame("box_1", "px:0001", b"\x89PNG one")
    await store.put_frame("box_2", "px:0001", b"\x89PNG two")
    await store.put_frame("box_1", "px:0001", b"\x89PNG one")

    assert await store.get_frame("box_1", "px:0001") == b"\x89PNG one"
    assert await store.get_frame("box_2", "px:0001") == b"\x89PNG two"
    assert await store.get_frame("box_1", "px:0002") is None
    with pytest.raises(BadRequest):
        await store.put_frame("box_1", "../x", b"no")


async def test_prune_drops_old_frames_before_old_traces(store: TraceStore) -> None:
    now = now_ms()
    await store.append("box_1", [frame_seen("px:1", at_ms=now), paused(at_ms=now)])
    await store.put_frame("box_1", "px:1", b"png")

    kept = await store.prune(now + HOUR_MS)
    assert (kept.frames, kept.entries, kept.boxes) == (0, 0, 0)
    assert await store.get_frame("box_1", "px:1") == b"png"

    frames_gone = await store.prune(now + 3 * HOUR_MS)
    assert (frames_gone.frames, frames_gone.entries, frames_gone.boxes) == (1, 0, 0)
    assert await store.get_frame("box_1", "px:1") is None
    assert len(await store.read("box_1")) == 2


async def test_prune_drops_a_trace_whole_once_its_last_entry_is_old(store: TraceStore) -> None:
    now = now_ms()
    await store.append("box_old", [created("box_old", at_ms=now - 10 * DAY_MS)])
    await store.append("box_old", [paused(at_ms=now - 8 * DAY_MS)])
    # Started long ago but written lately: kept, and its box_created with it.
    await store.append("box_long", [created("box_long", at_ms=now - 30 * DAY_MS)])
    await store.append("box_long", [paused(at_ms=now - DAY_MS)])

    report = await store.prune(now, keep_box_state)

    assert (report.boxes, report.entries) == (1, 2)
    assert await store.read("box_old") == []
    assert await store.info("box_old") is None
    assert [entry.seq for entry in await store.read("box_long")] == [0, 1]
    assert [info.trace for info in await store.traces()] == ["box_long"]


async def test_a_trace_stays_until_it_is_pruned(store: TraceStore) -> None:
    now = now_ms()
    await store.append("box_1", [created(at_ms=now)])
    for other in range(20):
        await store.append(f"box_x{other}", [created(f"box_x{other}", at_ms=now)])

    assert (await store.prune(now + DAY_MS)).boxes == 0
    assert [entry.seq for entry in await store.read("box_1")] == [0]


async def test_a_pruned_trace_starts_again_from_seq_zero(store: TraceStore) -> None:
    now = now_ms()
    await store.append("box_1", [paused(at_ms=now - 8 * DAY_MS)] * 3)
    await store.prune(now)

    again = await store.append("box_1", [paused(at_ms=now)])
    assert [entry.seq for entry in again] == [0]


async def test_an_append_that_cannot_be_encoded_leaves_no_trace(store: TraceStore) -> None:
    with pytest.raises(TypeError):
        await store.append("box_new", [paused(), executed(stdout=object())])
    await store.append("box_other", [paused()])  # a write after it, to see what it left

    assert await store.info("box_new") is None
    assert [info.trace for info in await store.traces()] == ["box_other"]
    assert [entry.seq for entry in await store.append("box_new", [paused()])] == [0]
