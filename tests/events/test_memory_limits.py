"""The memory store's bounds (trace-and-fork.md): 10,000 entries and 256 frames for each
trace, traces for 256 boxes; the oldest goes first."""

from __future__ import annotations

import pytest

from holm.errors import Unavailable
from holm.events import MemoryStore
from holm.wire.entries import SERVER_TRACE, BoxDeleted, BoxGone, Entry

from .conftest import HOUR_MS, clicked, now_ms, paused


def gone(at_ms: int = 1_000) -> Entry:
    return BoxGone(seq=0, at_ms=at_ms, actor="system", reason="expired")


def deleted(at_ms: int = 1_000) -> Entry:
    return BoxDeleted(seq=0, at_ms=at_ms, actor="agent")


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


async def test_traces_for_256_boxes_the_least_recently_written_removed_box_goes_first() -> None:
    store = MemoryStore()
    await store.append(SERVER_TRACE, [paused()])
    for n in range(256):
        await store.append(f"box_{n}", [paused()])
    await store.append("box_1", [gone()])
    await store.append("box_2", [gone()])
    await store.append("box_1", [paused()])  # box_1 is now written more lately than box_2

    await store.append("box_new", [paused()])

    names = {info.trace for info in await store.traces()}
    assert len(names) == 257
    assert "box_2" not in names
    # box_0 is the least recently written, but its box is live.
    assert {"box_0", "box_1", "box_new", SERVER_TRACE} <= names
    assert await store.read("box_2") == []


async def test_a_new_box_trace_is_refused_when_every_trace_is_a_live_box_s() -> None:
    store = MemoryStore(max_traces=3)
    for n in range(3):
        await store.append(f"box_{n}", [paused()])

    with pytest.raises(Unavailable) as refused:
        await store.append("box_new", [paused()])

    assert refused.value.retryable and refused.value.status == 503
    assert {info.trace for info in await store.traces()} == {"box_0", "box_1", "box_2"}
    # The server's own trace does not count; a deleted box makes room.
    await store.append(SERVER_TRACE, [paused()])
    await store.append("box_1", [deleted()])
    await store.append("box_new", [paused()])
    names = {info.trace for info in await store.traces()}
    assert names == {"box_0", "box_2", "box_new", SERVER_TRACE}


async def test_frames_also_go_by_age() -> None:
    store = MemoryStore(keep_frames_secs=3600)
    await store.put_frame("box_1", "px:1", b"png")

    assert (await store.prune(now_ms() + HOUR_MS // 2)).frames == 0
    assert (await store.prune(now_ms() + 2 * HOUR_MS)).frames == 1
    assert await store.get_frame("box_1", "px:1") is None
