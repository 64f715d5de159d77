"""The local store's `.idx`: a page from the middle comes from the offsets it holds, and a
missing, lagging, longer or wrong index is rebuilt rather than trusted."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from holm.events import LocalStore
from holm.events.local import INDEX_BATCH
from holm.wire.entries import Acted

from .conftest import clicked

COUNT = 20_000


def offsets_of(jsonl: Path) -> bytes:
    data = jsonl.read_bytes()
    starts = [0] + [i + 1 for i, byte in enumerate(data[:-1]) if byte == 0x0A]
    return struct.pack(f"<{len(starts)}Q", *starts)


@pytest.fixture
async def state(tmp_path: Path) -> Path:
    store = LocalStore(tmp_path)
    for batch in range(COUNT // 1_000):
        await store.append("box_1", [clicked(batch * 1_000 + i) for i in range(1_000)])
    await store.close()
    return tmp_path


async def page_is_right(state: Path, after: int = 9_999) -> None:
    store = LocalStore(state)
    try:
        page = await store.read("box_1", after=after, limit=500)
        assert [entry.seq for entry in page] == list(range(after + 1, after + 501))
        xs = [entry.action.at.x for entry in page if isinstance(entry, Acted)]  # type: ignore[union-attr]
        assert xs == list(range(after + 1, after + 501))
        tail = await store.read("box_1", after=COUNT - 3)
        assert [entry.seq for entry in tail] == [COUNT - 2, COUNT - 1]
    finally:
        await store.close()


async def test_the_index_holds_the_offset_of_every_line(state: Path) -> None:
    traces = state / "traces"
    assert (traces / "box_1.idx").read_bytes() == offsets_of(traces / "box_1.jsonl")
    await page_is_right(state)


def delete(idx: Path) -> None:
    idx.unlink()


def lag(idx: Path) -> None:
    # As after a crash: the index is not fsynced, so its end can be missing or half there.
    idx.write_bytes(idx.read_bytes()[: -8 * 300 - 5])


def overrun(idx: Path) -> None:
    idx.write_bytes(idx.read_bytes() + struct.pack("<3Q", 1, 2, 3))


def scramble_middle(idx: Path) -> None:
    data = bytearray(idx.read_bytes())
    data[8 * 10_000 : 8 * 10_600] = bytes(range(256)) * 18 + bytes(192)
    idx.write_bytes(bytes(data))


def empty(idx: Path) -> None:
    idx.write_bytes(b"")


@pytest.mark.parametrize("damage", [delete, lag, overrun, scramble_middle, empty])
async def test_a_damaged_index_is_rebuilt(state: Path, damage: Callable[[Path], None]) -> None:
    idx = state / "traces" / "box_1.idx"
    damage(idx)

    await page_is_right(state)

    assert idx.read_bytes() == offsets_of(state / "traces" / "box_1.jsonl")


async def test_an_index_damaged_while_open_is_rebuilt_on_read(state: Path) -> None:
    store = LocalStore(state)
    try:
        assert len(await store.read("box_1", after=100, limit=1)) == 1
        scramble_middle(state / "traces" / "box_1.idx")

        page = await store.read("box_1", after=9_999, limit=500)

        assert [entry.seq for entry in page] == list(range(10_000, 10_500))
        (state / "traces" / "box_1.idx").unlink()
        assert [e.seq for e in await store.append("box_1", [clicked(1)])] == [COUNT]
        assert [e.seq for e in await store.read("box_1", after=COUNT - 2)] == [COUNT - 1, COUNT]
    finally:
        await store.close()
    assert (state / "traces" / "box_1.idx").read_bytes() == offsets_of(
        state / "traces" / "box_1.jsonl"
    )


async def test_offsets_held_back_from_the_index_are_read_from_memory(tmp_path: Path) -> None:
    # One line a commit: the writer writes the index every INDEX_BATCH commits, and a read
    # of the lines it holds back meanwhile finds them all the same.
    store = LocalStore(tmp_path)
    idx = tmp_path / "traces" / "box_1.idx"
    try:
        for i in range(3 * INDEX_BATCH):
            await store.append("box_1", [clicked(i)])
            for after in {-1, i // 2, i - 3, i - 1}:
                page = await store.read("box_1", after=after, limit=5)
                want = list(range(max(after + 1, 0), min(after + 6, i + 1)))
                assert [entry.seq for entry in page] == want
            # The reads needed no rebuild: the file holds the batches written, no more.
            assert idx.stat().st_size == (i + 1) // INDEX_BATCH * INDEX_BATCH * 8
    finally:
        await store.close()
    # Closed, the index holds every line.
    assert idx.read_bytes() == offsets_of(tmp_path / "traces" / "box_1.jsonl")
