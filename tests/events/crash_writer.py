"""Appends to a local store from many tasks until it is killed; prints `<trace> <seq>` for
each entry as soon as its append has returned. Used by test_crash.py.

    python crash_writer.py STATE_DIR [JOURNAL_BYTES]

JOURNAL_BYTES, when given, is the size at which the store's journal starts a checkpoint.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

from holm.events import LocalStore
from holm.events.codec import SPILL_BYTES
from holm.events.write_ahead import SEGMENT_BYTES
from holm.wire.entries import BoxPaused, Entry, Executed

TASKS = 48


def entry(rng: random.Random) -> Entry:
    # Long lines (two values just under the spill size) make a commit's write long enough
    # that a kill often lands inside it and tears a line.
    size = rng.choice([0, 20_000, 60_000, 60_000, 60_000, SPILL_BYTES + 1_000])
    if size == 0:
        return BoxPaused(seq=-1, at_ms=rng.randrange(2**40), actor="agent")
    return Executed(
        seq=-1,
        at_ms=rng.randrange(2**40),
        actor="agent",
        argv=["echo"],
        code=0,
        timed_out=False,
        key="sha256:" + "5" * 64,
        stdout=rng.choice("abcdef") * size,
        stderr=rng.choice("ghijkl") * min(size, 60_000),
    )


async def write_forever(store: LocalStore, task: int) -> None:
    rng = random.Random(task)
    trace = f"box_{task % 4}"
    while True:
        appended = await store.append(trace, [entry(rng) for _ in range(rng.randint(1, 3))])
        sys.stdout.write("".join(f"{trace} {e.seq}\n" for e in appended))
        sys.stdout.flush()


async def main(state_dir: Path, journal_bytes: int) -> None:
    store = LocalStore(state_dir, journal_bytes=journal_bytes)
    await asyncio.gather(*(write_forever(store, task) for task in range(TASKS)))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else SEGMENT_BYTES))
