"""The memory store's bounds (trace-and-fork.md): 10,000 entries and 256 frames for each
trace, traces for 256 boxes; the oldest goes first."""

from __future__ import annotations

from holm.events import MemoryStore
from holm.wire.entries import SERVER_TRACE

from .conftest import HOUR_MS, clicked, now_ms, paused


async def test_a_trace_keeps_its_last_10_000_entries_and_keeps_counting() -> None:
    store = MemoryStore()
    for batch in range(10):
        await store.append("box_1", [clicked(batch * 1_005 + i) for i in range(1_005)])

    info = await store.info("box_1")
    assert info is not None and (info.entries, info.max_seq) == (10_000, 10_049)
    first = await store.read("box_1", limit=3)
    assert [entry.seq for entry in first] == [50, 51, 52]
    assert [entry.seq for entry in await store.read("box_1", after=10, limit=1)] == [50]
    assert [entry.seq for entry in await store.read("box_1", after=9_000, limit=2)] == [
        9_001,
        9_002,
    ]
    assert [entry.seq for entry in await store.append("box_1", [paused()])] == [10_050]


async def test_a_trace_keeps_its_last_256_frames() -> None:
    store = MemoryStore()
    for n in range(257):
        await store.put_frame("box_1", f"px:{n}", b"png %d" % n)

    assert await store.get_frame("box_1", "px:0") is None
    assert await store.get_frame("box_1", "px:1") == b"png 1"
    assert await store.get_frame("box_1", "px:256") == b"png 256"


async def test_a_frame_seen_again_is_kept_as_new() -> None:
    store = MemoryStore()
    for n in range(256):
        await store.put_frame("box_1", f"px:{n}", b"png")
    await store.put_frame("box_1", "px:0", b"png")  # the screen went back to its first look
    await store.put_frame("box_1", "px:new", b"png")

    assert await store.get_frame("box_1", "px:0") == b"png"
    assert await store.get_frame("box_1", "px:1") is None


async def test_traces_for_256_boxes_the_least_recently_written_goes_first() -> None:
    store = MemoryStore()
    await store.append(SERVER_TRACE, [paused()])
    for n in range(256):
        await store.append(f"box_{n}", [paused()])
    await store.append("box_0", [paused()])  # box_0 is now written more lately than box_1

    await store.append("box_new", [paused()])

    names = {info.trace for info in await store.traces()}
    assert len(names) == 257
    assert "box_1" not in names
    assert {"box_0", "box_2", "box_new", SERVER_TRACE} <= names
    assert await store.read("box_1") == []


async def test_frames_also_go_by_age() -> None:
    store = MemoryStore(keep_frames_secs=3600)
    await store.put_frame("box_1", "px:1", b"png")

    assert (await store.prune(now_ms() + HOUR_MS // 2)).frames == 0
    assert (await store.prune(now_ms() + 2 * HOUR_MS)).frames == 1
    assert await store.get_frame("box_1", "px:1") is None
