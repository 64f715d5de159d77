"""A writer killed with SIGKILL, again and again: every append it was told had landed is
there after a reopen, seqs stay contiguous from 0, a torn line is never served, and no trace
reads as incomplete: a line torn in a trace file was in the journal whole, and is mended from
it. With a small journal the kills land in checkpoints too."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from holm.events import LocalStore, read_trace_file, trace_files
from holm.events.write_ahead import SEGMENT_BYTES

REPO = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("crash_writer.py")
KILLS = 5
ACKS_BEFORE_KILL = 300


async def run_and_kill(state: Path, acked: dict[str, set[int]], journal_bytes: int) -> None:
    """Start the writer, let it acknowledge some appends, SIGKILL it mid-run."""
    writer = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WRITER),
        str(state),
        str(journal_bytes),
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    assert writer.stdout is not None
    try:
        for _ in range(ACKS_BEFORE_KILL):
            record(await writer.stdout.readline(), acked)
        # Let the kill land anywhere in the writer's cycle, not just after an answer.
        await asyncio.sleep(random.uniform(0, 0.05))
    finally:
        writer.send_signal(signal.SIGKILL)
        rest = await writer.stdout.read()
        await writer.wait()
    for line in rest.splitlines(keepends=True):
        record(line, acked)
    assert writer.returncode == -signal.SIGKILL  # it was still writing when killed


def record(line: bytes, acked: dict[str, set[int]]) -> None:
    if line.endswith(b"\n"):  # the kill can cut the last report short
        trace, seq = line.split()
        acked[trace.decode()].add(int(seq))


@pytest.mark.parametrize("journal_bytes", [SEGMENT_BYTES, 256 << 10])
async def test_acknowledged_appends_survive_sigkill(tmp_path: Path, journal_bytes: int) -> None:
    acked: dict[str, set[int]] = defaultdict(set)
    for _ in range(KILLS):
        await run_and_kill(tmp_path, acked, journal_bytes)
        store = LocalStore(tmp_path)
        try:
            traces = [path.stem for path in trace_files(tmp_path)]
            assert set(acked) <= set(traces)
            for trace in traces:
                entries = await store.read(trace, limit=1_000_000)
                seqs = [entry.seq for entry in entries]
                assert seqs == list(range(len(entries)))
                assert acked[trace] <= set(seqs)
                info = await store.info(trace)
                assert info is not None and not info.incomplete
                offline = read_trace_file(tmp_path / "traces" / f"{trace}.jsonl")
                assert (offline.entries, offline.incomplete) == (entries, False)
        finally:
            await store.close()
    assert sum(len(seqs) for seqs in acked.values()) >= KILLS * ACKS_BEFORE_KILL
