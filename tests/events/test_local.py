"""The local store's files: what is on disk, torn lines, the lock, group commit, spills."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
from pathlib import Path

import pytest

from holm.config import load_config
from holm.errors import Internal, Unavailable
from holm.events import LocalStore, MemoryStore, open_store, read_trace_file, trace_files
from holm.events.aio_sync import AioSync, NotSubmitted
from holm.events.codec import SPILL_BYTES
from holm.wire.entries import Executed

from .conftest import DAY_MS, clicked, created, executed, now_ms, paused


def lines_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


async def test_each_entry_is_one_json_line_that_jq_can_read(local: LocalStore) -> None:
    await local.append("box_1", [created(), paused(at_ms=2_000)])

    path = local.state_dir / "traces" / "box_1.jsonl"
    assert path.read_bytes().count(b"\n") == 2
    first, second = lines_of(path)
    assert (first["kind"], first["seq"], first["actor"]) == ("box_created", 0, "agent")
    assert second == {"kind": "box_paused", "seq": 1, "at_ms": 2_000, "actor": "agent"}


async def test_a_big_value_is_spilled_to_a_blob_named_by_its_hash(local: LocalStore) -> None:
    stdout = "z" * (2 * SPILL_BYTES)
    await local.append("box_1", [executed(stdout=stdout)])

    path = local.state_dir / "traces" / "box_1.jsonl"
    assert path.stat().st_size < 2_000
    (line,) = lines_of(path)
    ref = line["stdout"]
    assert isinstance(ref, dict) and ref["bytes"] == len(stdout) + 2
    digest = str(ref["__blob"]).removeprefix("sha256:")
    blob = local.state_dir / "blobs" / digest[:2] / digest
    assert json.loads(blob.read_bytes()) == stdout
    assert line["argv"] == ["sh", "-c", "echo hi"]  # small fields stay on the line
    assert digest in (local.state_dir / "traces" / "box_1.blobs").read_text()


async def test_reopening_gives_back_every_trace_and_keeps_counting(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    await store.append("box_1", [created(), executed(stdout="y" * 3 * SPILL_BYTES)])
    await store.append("box_2", [paused()])
    before = await store.read("box_1")
    await store.close()

    again = LocalStore(tmp_path)
    try:
        assert await again.read("box_1") == before
        assert [i.trace for i in await again.traces()] == ["box_1", "box_2"]
        assert [e.seq for e in await again.append("box_1", [paused()])] == [2]
    finally:
        await again.close()


async def test_two_stores_never_write_one_state_dir(tmp_path: Path) -> None:
    first = LocalStore(tmp_path)
    with pytest.raises(Unavailable):
        LocalStore(tmp_path)
    await first.close()
    second = LocalStore(tmp_path)
    await second.close()


async def test_open_store_chooses_by_backend(tmp_path: Path) -> None:
    memory = open_store(load_config({}))
    env = {"HOLM_STORAGE_BACKEND": "local", "HOLM_STATE_DIR": str(tmp_path)}
    local = open_store(load_config(env))
    try:
        assert isinstance(memory, MemoryStore)
        assert isinstance(local, LocalStore) and local.state_dir == tmp_path
    finally:
        await memory.close()
        await local.close()


async def test_concurrent_appends_share_fsyncs(tmp_path: Path) -> None:
    async def fsyncs_for_64_appends(group_commit: bool) -> int:
        store = LocalStore(tmp_path / str(group_commit), group_commit=group_commit)
        await store.append("box_1", [paused()])  # opens the store
        before = store.fsyncs
        await asyncio.gather(*(store.append("box_1", [clicked(i)]) for i in range(64)))
        assert [e.seq for e in await store.read("box_1", limit=100)] == list(range(65))
        fsyncs = store.fsyncs - before  # those of the appends; closing adds a checkpoint's
        await store.close()
        return fsyncs

    assert await fsyncs_for_64_appends(group_commit=False) == 64
    assert await fsyncs_for_64_appends(group_commit=True) < 8


async def test_a_failed_write_gives_no_seq_and_the_next_append_takes_it(
    local: LocalStore,
) -> None:
    await local.append("box_ok", [paused()])
    blocker = local.state_dir / "traces" / "box_bad.jsonl"
    blocker.mkdir()  # the trace's file cannot be opened for writing

    results = await asyncio.gather(
        local.append("box_ok", [paused()]),
        local.append("box_bad", [paused()]),
        return_exceptions=True,
    )

    assert all(isinstance(result, Unavailable) for result in results)
    blocker.rmdir()
    assert [e.seq for e in await local.append("box_ok", [paused()])] == [1]
    assert [e.seq for e in await local.append("box_bad", [paused()])] == [0]
    assert [e.seq for e in await local.read("box_ok")] == [0, 1]


async def test_an_entry_that_cannot_be_encoded_fails_only_its_own_append(
    local: LocalStore,
) -> None:
    results = await asyncio.gather(
        local.append("box_1", [paused()]),
        local.append("box_1", [executed(stdout=object())]),
        local.append("box_1", [paused()]),
        return_exceptions=True,
    )

    assert isinstance(results[1], TypeError)
    assert [e.seq for e in await local.read("box_1")] == [0, 1]


# Torn lines


async def three_lines_then(tmp_path: Path, tail: bytes) -> Path:
    store = LocalStore(tmp_path)
    await store.append("box_1", [created(), paused(), clicked(3)])
    await store.close()
    path = tmp_path / "traces" / "box_1.jsonl"
    with path.open("ab") as file:
        file.write(tail)
    return path


GOOD_LINE = b'{"kind":"box_paused","seq":3,"at_ms":1,"actor":"agent"}\n'


@pytest.mark.parametrize(
    ("tail", "good", "torn"),
    [
        # Killed mid-line.
        (b'{"kind":"box_paused","seq":3,"at_', 3, b'{"kind":"box_paused","seq":3,"at_'),
        # The size grew, the data never came.
        (b"\x00" * 300 + b"\n", 3, b"\x00" * 300 + b"\n"),
        # One more whole line, then a torn one.
        (GOOD_LINE + b'{"kind"', 4, b'{"kind"'),
    ],
)
async def test_a_torn_line_is_cut_on_open_and_never_served(
    tmp_path: Path, tail: bytes, good: int, torn: bytes
) -> None:
    path = await three_lines_then(tmp_path, tail)
    offline = read_trace_file(path)
    assert (len(offline.entries), offline.incomplete) == (good, True)

    store = LocalStore(tmp_path)
    try:
        info = await store.info("box_1")
        assert info is not None and (info.entries, info.incomplete) == (good, True)
        assert [e.seq for e in await store.read("box_1")] == list(range(good))
        assert path.read_bytes().endswith(b"\n")
        assert (tmp_path / "traces" / "box_1.torn").read_bytes() == torn
        assert [e.seq for e in await store.append("box_1", [paused()])] == [good]
    finally:
        await store.close()


async def test_incomplete_lasts_until_the_next_clean_append(tmp_path: Path) -> None:
    path = await three_lines_then(tmp_path, b'{"kind":"gone","seq":3,"at_ms":5,"act')
    for _ in range(2):  # opening again without an append: still incomplete
        store = LocalStore(tmp_path)
        info = await store.info("box_1")
        assert info is not None and info.incomplete
        await store.close()
    assert read_trace_file(path).incomplete

    store = LocalStore(tmp_path)
    appended = await store.append("box_1", [paused()])
    info = await store.info("box_1")
    await store.close()

    assert [e.seq for e in appended] == [3]
    assert info is not None and not info.incomplete
    assert not (tmp_path / "traces" / "box_1.torn").exists()
    assert not read_trace_file(path).incomplete


# The offline reader of `holm trace FILE|DIR`


async def test_read_trace_file_reads_without_changing_the_file(tmp_path: Path) -> None:
    big = "q" * (SPILL_BYTES + 10)
    store = LocalStore(tmp_path)
    await store.append("box_1", [created(), executed(stdout=big), paused(), paused()])
    await store.close()
    path = tmp_path / "traces" / "box_1.jsonl"
    with path.open("ab") as file:
        file.write(b'{"kind":"pa')
    before = (path.read_bytes(), path.stat().st_mtime_ns)

    whole = read_trace_file(path)
    page = read_trace_file(path, after=0, limit=2)

    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert [e.seq for e in whole.entries] == [0, 1, 2, 3] and whole.incomplete
    assert [e.seq for e in page.entries] == [1, 2]
    stdout = page.entries[0]
    assert isinstance(stdout, Executed) and stdout.stdout == big


async def test_a_plain_folder_of_trace_files_reads_without_blobs(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "state")
    await store.append("box_1", [executed(stdout="w" * (SPILL_BYTES + 1))])
    await store.append("box_2", [paused()])
    await store.close()
    plain = tmp_path / "copied"
    plain.mkdir()
    for path in trace_files(tmp_path / "state"):
        shutil.copy(path, plain / path.name)

    assert [p.name for p in trace_files(tmp_path / "state")] == ["box_1.jsonl", "box_2.jsonl"]
    assert [p.name for p in trace_files(plain)] == ["box_1.jsonl", "box_2.jsonl"]
    (entry,) = read_trace_file(plain / "box_1.jsonl").entries
    # No blob store beside it: the reference is shown as it is written.
    assert isinstance(entry, Executed) and entry.stdout["bytes"] == SPILL_BYTES + 3


# Retention on disk


async def test_prune_removes_a_trace_s_files_and_the_blobs_only_it_used(
    local: LocalStore,
) -> None:
    now = now_ms()
    shared = "s" * (SPILL_BYTES + 1)
    old = now - 9 * DAY_MS
    await local.append("box_old", [executed(stdout=shared, at_ms=old)])
    await local.append("box_old", [executed(stdout="o" * (SPILL_BYTES + 1), at_ms=old)])
    await local.append("box_new", [executed(stdout=shared, at_ms=now)])
    await local.put_frame("box_old", "px:1", b"png")
    blobs = sorted((local.state_dir / "blobs").rglob("*"))
    blob_files = [path for path in blobs if path.is_file()]
    assert len(blob_files) == 2
    for path in blob_files:  # both written long ago as far as age goes
        os.utime(path, ns=(0, 0))

    report = await local.prune(now)

    assert (report.boxes, report.entries, report.frames) == (1, 2, 1)
    traces = sorted(p.name for p in (local.state_dir / "traces").iterdir())
    assert traces == ["box_new.blobs", "box_new.idx", "box_new.jsonl"]
    left = [path for path in (local.state_dir / "blobs").rglob("*") if path.is_file()]
    assert len(left) == 1
    (entry,) = await local.read("box_new")
    assert isinstance(entry, Executed) and entry.stdout == shared


async def test_a_last_line_of_an_unknown_kind_is_kept_not_taken_for_torn(
    tmp_path: Path,
) -> None:
    # Written by a newer holm: whole, with an envelope, of a kind this one lacks.
    newer = b'{"kind":"box_teleported","seq":3,"at_ms":5,"actor":"system"}\n'
    path = await three_lines_then(tmp_path, newer)

    store = LocalStore(tmp_path)
    try:
        info = await store.info("box_1")
        assert info is not None and (info.entries, info.incomplete) == (4, False)
        assert [e.seq for e in await store.read("box_1", limit=3)] == [0, 1, 2]
        with pytest.raises(Internal, match="box_teleported"):
            await store.read("box_1", after=2)
        assert [e.seq for e in await store.append("box_1", [paused()])] == [4]
    finally:
        await store.close()
    assert path.read_bytes().count(newer) == 1


async def test_the_usual_commit_is_fsynced_by_aio_and_reads_back(tmp_path: Path) -> None:
    for aio in (True, False):
        store = LocalStore(tmp_path / str(aio), aio=aio)
        # The first append makes the trace's file (in the thread); the next ones find it
        # open, and on this Linux their fdatasync is AIO's unless turned off.
        await store.append("box_1", [paused()])
        for i in range(5):
            await store.append("box_1", [clicked(i)])
        assert store.aio_commits == (5 if aio else 0)
        await store.close()
        again = LocalStore(tmp_path / str(aio))
        assert [e.seq for e in await again.read("box_1")] == list(range(6))
        await again.close()


async def test_an_fdatasync_the_kernel_does_not_take_is_done_in_the_thread(
    local: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await local.append("box_1", [paused()])
    asked: list[int] = []

    def refused(self: AioSync, fd: int) -> asyncio.Future[None]:
        asked.append(fd)
        raise NotSubmitted(errno.EAGAIN, "full")

    monkeypatch.setattr(AioSync, "submit", refused)
    assert [e.seq for e in await local.append("box_1", [clicked(1)])] == [1]
    assert len(asked) == 1
    assert [e.seq for e in await local.read("box_1")] == [0, 1]


async def test_a_failed_aio_fdatasync_gives_no_seq_and_cuts_the_lines_back(
    local: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await local.append("box_1", [paused()])
    size = (local.state_dir / "traces" / "box_1.jsonl").stat().st_size
    real = AioSync.submit

    def failing(self: AioSync, fd: int) -> asyncio.Future[None]:
        done = asyncio.get_running_loop().create_future()
        done.set_exception(OSError(errno.EIO, "the disk failed"))
        return done

    monkeypatch.setattr(AioSync, "submit", failing)
    with pytest.raises(Unavailable):
        await local.append("box_1", [clicked(1)])
    assert (local.state_dir / "traces" / "box_1.jsonl").stat().st_size == size
    monkeypatch.setattr(AioSync, "submit", real)
    assert [e.seq for e in await local.append("box_1", [clicked(2)])] == [1]
    assert local.aio_commits == 1
