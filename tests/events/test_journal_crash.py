"""A writer killed between the journal and the trace files (journal_writer.py): on the next
open every entry it was told had landed is there, in order, each seq once, with what it
held; a line torn in a trace file is mended from the journal, not cut."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from holm.events import LocalStore, read_trace_file, trace_files
from holm.wire.entries import FrameSeen

REPO = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("journal_writer.py")


def png_of(frame_hash: str) -> bytes:
    """The picture the writer put for a frame (journal_writer.py's `png_of`, which runs as a
    script, not a module the tests import)."""
    spec = importlib.util.spec_from_file_location("journal_writer", WRITER)
    assert spec is not None and spec.loader is not None
    writer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(writer)
    return bytes(writer.png_of(frame_hash))


async def run_until_it_kills_itself(
    state: Path, mode: str, writes: int
) -> dict[str, dict[int, int]]:
    """The writer's acknowledged entries: trace -> seq -> at_ms."""
    writer = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WRITER),
        str(state),
        mode,
        str(writes),
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    out, _ = await asyncio.wait_for(writer.communicate(), 120)
    assert writer.returncode == -signal.SIGKILL
    acked: dict[str, dict[int, int]] = defaultdict(dict)
    for line in out.splitlines(keepends=True):
        if line.endswith(b"\n"):  # the kill can cut the last report short
            trace, seq, at_ms = line.split()
            assert int(seq) not in acked[trace.decode()]
            acked[trace.decode()][int(seq)] = int(at_ms)
    return acked


async def reopened_holds(state: Path, acked: dict[str, dict[int, int]]) -> LocalStore:
    store = LocalStore(state)
    for trace, seqs in acked.items():
        entries = await store.read(trace, limit=1_000_000)
        assert [entry.seq for entry in entries] == list(range(len(entries)))
        at_ms = {entry.seq: entry.at_ms for entry in entries}
        assert {seq: at_ms.get(seq) for seq in seqs} == seqs
        info = await store.info(trace)
        assert info is not None and not info.incomplete
        offline = read_trace_file(state / "traces" / f"{trace}.jsonl")
        assert (offline.entries, offline.incomplete) == (entries, False)
    return store


async def test_entries_answered_after_the_trace_files_were_lost_come_back(
    tmp_path: Path,
) -> None:
    acked = await run_until_it_kills_itself(tmp_path, "lost", 400)
    on_disk = {path.stem: len(read_trace_file(path).entries) for path in trace_files(tmp_path)}
    # Answered, yet missing from their trace files: only the journal has them.
    missing = sum(1 for trace, seqs in acked.items() for seq in seqs if seq >= on_disk[trace])
    assert missing > 100

    store = await reopened_holds(tmp_path, acked)
    try:
        assert store.replayed >= missing
        # Appends go on after the replayed entries.
        trace = max(acked, key=lambda name: max(acked[name]))
        last = await store.max_seq(trace)
        assert last >= max(acked[trace])
        (entry,) = await store.append(trace, (await store.read(trace, limit=1))[:1])
        assert entry.seq == last + 1
    finally:
        await store.close()
    # A clean close is a checkpoint: nothing is left to replay.
    assert list((tmp_path / "journal").iterdir()) == []
    again = await reopened_holds(tmp_path, acked)
    assert again.replayed == 0
    await again.close()


@pytest.mark.parametrize("writes", [5, 300])
async def test_a_line_torn_in_a_trace_file_is_mended_from_the_journal(
    tmp_path: Path, writes: int
) -> None:
    acked = await run_until_it_kills_itself(tmp_path, "torn", writes)
    torn = [path.stem for path in trace_files(tmp_path) if read_trace_file(path).incomplete]
    assert len(torn) == 1

    store = await reopened_holds(tmp_path, acked)
    try:
        # The torn commit was never answered, but the journal had it whole: it is kept.
        info = await store.info(torn[0])
        assert info is not None and info.max_seq > max(acked[torn[0]], default=-1)
        assert not (tmp_path / "traces" / f"{torn[0]}.torn").exists()
    finally:
        await store.close()


async def test_frames_answered_after_their_files_were_lost_come_back(tmp_path: Path) -> None:
    """A frame is journaled with the commit of the entry after it (local.py, `put_frame`):
    a picture whose file a crash lost is written again from the journal, so no answered
    `frame` entry names a picture the store lacks."""
    # Few enough commits that no checkpoint syncs the files the writer left unwritten.
    acked = await run_until_it_kills_itself(tmp_path, "frames", 50)
    frames = tmp_path / "frames"
    store = await reopened_holds(tmp_path, acked)
    try:
        named = {
            entry.frame
            for trace in acked
            for entry in await store.read(trace, limit=1_000_000)
            if isinstance(entry, FrameSeen)
        }
        # Answered, yet missing from the frames' folder before the reopen.
        assert store.replayed_frames > 50
        for trace, seqs in acked.items():
            entries = {entry.seq: entry for entry in await store.read(trace, limit=1_000_000)}
            for seq in seqs:
                seen = entries[seq]
                assert isinstance(seen, FrameSeen) and seen.frame in named
                assert await store.get_frame(trace, seen.frame) == png_of(seen.frame)
                assert (frames / trace / f"{seen.frame}.png").read_bytes() == png_of(seen.frame)
    finally:
        await store.close()
