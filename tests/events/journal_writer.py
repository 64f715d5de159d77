"""Appends to a local store from many tasks across many traces, printing `<trace> <seq>`
for each entry as soon as its append has returned, until it kills itself with SIGKILL at a
point of the commit path that `MODE` names. Used by test_journal_crash.py.

    python journal_writer.py STATE_DIR MODE WRITES

Each entry is printed as `<trace> <seq> <at_ms>`. A commit writes each trace it touches
once; WRITES counts those writes.

- `lost`: after WRITES writes the trace files are no longer written (as if the machine had
  lost what the page cache held of them; the journal goes on), and WRITES writes later the
  writer is killed: every entry answered since is only in the journal.
- `torn`: at write WRITES, half of the first new line is written, then the kill.
- `frames`: each append is a `frame` entry after its picture was put (`png_of`); after
  WRITES writes the frames' files are no longer written (lost as the trace files are in
  `lost`), and WRITES writes later the kill: every frame answered since is only in the
  journal.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
from pathlib import Path
from typing import Any

from holm.events import local
from holm.events.local import LocalStore
from holm.wire.entries import BoxPaused, Entry, Executed, FrameSeen

TASKS = 64
TRACES = 16


def entry(rng: random.Random) -> Entry:
    if rng.random() < 0.5:
        return BoxPaused(seq=-1, at_ms=rng.randrange(2**40), actor="agent")
    return Executed(
        seq=-1,
        at_ms=rng.randrange(2**40),
        actor="agent",
        argv=["echo"],
        code=0,
        timed_out=False,
        key="sha256:" + "5" * 64,
        stdout=rng.choice("abcdef") * rng.randrange(2_000),
    )


def png_of(frame_hash: str) -> bytes:
    """The picture put for a frame (`frames`): a few KiB that name it."""
    return b"\x89PNG" + frame_hash.encode() * 200


def kill() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def break_the_commit_path(mode: str, writes: int) -> None:
    done = 0
    write_lines, index_offsets = local._write_lines, local._index_offsets

    def write(held: Any, work: Any) -> int:
        nonlocal done
        done += 1
        match mode:
            case "lost" if done > writes * 2:
                kill()
            case "lost" if done > writes:
                return int(work.size + len(work.data()))  # what the page cache lost
            case "torn" if done == writes:
                data = work.data()
                os.pwrite(held.jsonl, data[: data.index(b"\n") // 2 + 1], work.size)
                kill()
        return write_lines(held, work)

    def index(held: Any, work: Any) -> bool:
        # Nor is an index written once the lines are not: it would point past the end.
        return True if mode == "lost" and done > writes else index_offsets(held, work)

    write_frames = local._write_frames

    def frames(frames: Any) -> None:
        nonlocal done
        done += 1
        if done > writes * 2:
            kill()
        if done <= writes:
            write_frames(frames)

    if mode == "frames":
        local._write_frames = frames  # type: ignore[assignment]
        return
    local._write_lines = write  # type: ignore[assignment]
    local._index_offsets = index  # type: ignore[assignment]


async def write_forever(store: LocalStore, task: int, mode: str) -> None:
    rng = random.Random(task)
    while True:
        trace = f"box_{rng.randrange(TRACES)}"
        if mode == "frames":
            frame_hash = f"px:{task}-{rng.randrange(2**40)}"
            await store.put_frame(trace, frame_hash, png_of(frame_hash))
            seen = FrameSeen(
                seq=-1,
                at_ms=rng.randrange(2**40),
                actor="agent",
                screen=0,
                frame=frame_hash,
                width=8,
                height=8,
            )
            entries: list[Entry] = [seen]
        else:
            entries = [entry(rng) for _ in range(rng.randint(1, 3))]
        appended = await store.append(trace, entries)
        sys.stdout.write("".join(f"{trace} {e.seq} {e.at_ms}\n" for e in appended))
        sys.stdout.flush()


async def main(state_dir: Path, mode: str, writes: int) -> None:
    store = LocalStore(state_dir)
    await store.traces()
    break_the_commit_path(mode, writes)
    await asyncio.gather(*(write_forever(store, task, mode) for task in range(TASKS)))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])))
