"""Figures of the local trace store. Prints numbers; asserts nothing.

    .venv/bin/python bench/store.py [--before CHECKOUT] [--rounds N]

- durable appends from 64 concurrent writers (one entry each call), with group commit and
  with one fsync per append, on one trace and on 64 traces;
- a 500-entry page from the middle of a 100,000-entry trace, through `read`.

`--before CHECKOUT` (a checkout of an older revision, e.g. `git worktree add /tmp/before
main`) measures the group-commit appends of that revision's store and of this one in turns,
each in a process of its own, N rounds (default 3), so that both meet the same disk: this
machine's fsync time swings tenfold within a minute when others use it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# `--holm CHECKOUT` (a child of `--before`): that checkout's holm is the one measured.
HOLM = Path(sys.argv[sys.argv.index("--holm") + 1]) if "--holm" in sys.argv else REPO
sys.path.insert(0, str(HOLM))

from holm.events import LocalStore  # noqa: E402
from holm.wire.actions import Click  # noqa: E402
from holm.wire.entries import Acted, Entry  # noqa: E402
from holm.wire.values import Point  # noqa: E402

WRITERS = 64
PAGE = 500
TRACE_ENTRIES = 100_000


def click(n: int) -> Entry:
    return Acted(
        seq=-1,
        at_ms=1_700_000_000_000 + n,
        actor="agent",
        screen=0,
        action=Click(at=Point(x=n % 1280, y=n % 800)),
        ok=True,
        key="sha256:" + "9" * 64,
        batch="batch_0001",
        index=n % 10,
    )


def fsync_latency_ms(folder: Path, pause_s: float = 0.0, rounds: int = 200) -> float:
    """The disk's own figure: median time of a small write + fdatasync, each `pause_s` after
    the last. A closed loop of 64 writers cannot go past 64 appends per this time, however
    well commits are shared."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / "probe", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    times = []
    try:
        for _ in range(rounds):
            time.sleep(pause_s)
            start = time.perf_counter()
            os.write(fd, b"x" * 200 + b"\n")
            os.fdatasync(fd)
            times.append((time.perf_counter() - start) * 1000)
    finally:
        os.close(fd)
    return statistics.median(times)


async def appends(folder: Path, *, group_commit: bool, traces: int, per_writer: int) -> float:
    """Entries per second; prints the fsyncs behind them."""
    figures = await measure_appends(
        folder, group_commit=group_commit, traces=traces, per_writer=per_writer
    )
    mode = "group commit " if group_commit else "fsync/append "
    print(f"  {mode} {traces:>2} trace(s): {row(figures)}")
    return figures["rate"]


def row(figures: dict[str, float]) -> str:
    return (
        f"{figures['rate']:>9,.0f} entries/s  {figures['fsyncs_s']:>7,.0f} fsyncs/s"
        f"  {figures['per_commit']:>5.1f} appends/commit  {figures['cpu_us']:>5.1f} µs CPU/append"
        f"  ({figures['total']:,.0f} in {figures['took']:.2f} s)"
    )


async def measure_appends(
    folder: Path, *, group_commit: bool, traces: int, per_writer: int
) -> dict[str, float]:
    store = LocalStore(folder, group_commit=group_commit)
    await store.traces()  # open before the clock starts

    async def writer(number: int) -> None:
        trace = f"box_{number % traces}"
        for i in range(per_writer):
            await store.append(trace, [click(i)])

    fsyncs, commits = store.fsyncs, store.commits
    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(writer(n) for n in range(WRITERS)))
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
    fsyncs, commits = store.fsyncs - fsyncs, store.commits - commits
    await store.close()
    total = WRITERS * per_writer
    return {
        "rate": total / took,
        "fsyncs_s": fsyncs / took,
        "per_commit": total / commits,
        "cpu_us": cpu / total * 1e6,
        "total": total,
        "took": took,
    }


def in_turns(
    before: Path,
    rounds: int,
    child: Callable[[Path, int], list[str]],
    show: Callable[[str, int, dict[str, float]], str],
) -> None:
    """Each shape (1 and 64 traces) measured by `before`'s store and by this one in turns,
    each in a child process (`child(checkout, traces)`: its argv; it prints its figures as
    JSON), `rounds` times, so that both meet the same machine; then the medians."""
    rates: dict[tuple[str, int], list[float]] = {}
    for round_ in range(rounds):
        for traces in (64, 1):
            for name, checkout in (("before", before), ("after", REPO)):
                out = subprocess.run(
                    child(checkout, traces), check=True, capture_output=True, text=True
                ).stdout
                figures = json.loads(out)
                rates.setdefault((name, traces), []).append(figures["rate"])
                print(f"  round {round_ + 1} {show(name, traces, figures)}")
    for traces in (64, 1):
        old = statistics.median(rates[("before", traces)])
        new = statistics.median(rates[("after", traces)])
        print(
            f"  median on {traces:>2} trace(s): before {old:>9,.0f}/s, after {new:>9,.0f}/s"
            f" ({new / old:.2f}x)"
        )


def before_and_after(before: Path, rounds: int) -> None:
    """Group-commit appends of `before`'s store and of this one, in turns."""
    print(f"durable appends with group commit, {before} (before) and {REPO} (after) in turns:")
    in_turns(
        before,
        rounds,
        lambda checkout, traces: [
            *(sys.executable, __file__, "--holm", str(checkout), "--case", str(traces))
        ],
        lambda name, traces, figures: f"{name:<6} {traces:>2} trace(s): {row(figures)}",
    )


async def one_case(traces: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="holm-bench-store-"))
    try:
        figures = await measure_appends(root, group_commit=True, traces=traces, per_writer=800)
    finally:
        shutil.rmtree(root)
    print(json.dumps(figures))


async def page_reads(folder: Path) -> None:
    store = LocalStore(folder)
    for first in range(0, TRACE_ENTRIES, 5_000):
        await store.append("box_big", [click(n) for n in range(first, first + 5_000)])
    size = (folder / "traces" / "box_big.jsonl").stat().st_size
    rng = random.Random(1)
    times = []
    for _ in range(300):
        after = rng.randrange(TRACE_ENTRIES // 4, 3 * TRACE_ENTRIES // 4)
        start = time.perf_counter()
        await store.read("box_big", after=after, limit=PAGE)
        times.append((time.perf_counter() - start) * 1000)
    await store.close()
    times.sort()
    print(
        f"  page of {PAGE} from the middle of {TRACE_ENTRIES:,} entries ({size / 1e6:.0f} MB):"
        f" p50 {statistics.median(times):.2f} ms, p95 {times[int(len(times) * 0.95)]:.2f} ms"
    )


async def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="holm-bench-store-"))
    try:
        latency = fsync_latency_ms(root / "probe")
        print(
            f"this disk now: write + fdatasync p50 {latency:.2f} ms"
            f" (so at most {WRITERS / latency * 1000:,.0f} appends/s"
            f" from {WRITERS} writers that each wait for their append)"
        )
        print(f"durable appends, {WRITERS} concurrent writers, one entry per append:")
        grouped = await appends(root / "g1", group_commit=True, traces=1, per_writer=800)
        single = await appends(root / "s1", group_commit=False, traces=1, per_writer=40)
        grouped_64 = await appends(root / "g64", group_commit=True, traces=64, per_writer=800)
        single_64 = await appends(root / "s64", group_commit=False, traces=64, per_writer=40)
        print(
            f"  group commit / fsync per append: {grouped / single:.1f}x on one trace,"
            f" {grouped_64 / single_64:.1f}x on 64 traces"
        )
        print(f"this disk after: write + fdatasync p50 {fsync_latency_ms(root / 'probe'):.2f} ms")
        print("reads:")
        await page_reads(root / "read")
    finally:
        shutil.rmtree(root)


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="a checkout of the revision to compare")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--holm", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--case", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case is not None:
        asyncio.run(one_case(args.case))
    elif args.before is not None:
        before_and_after(args.before.resolve(), args.rounds)
    else:
        asyncio.run(main())


if __name__ == "__main__":
    cli()
