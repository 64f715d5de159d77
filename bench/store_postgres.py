"""Figures of the postgres trace store beside the local store, in one run. Prints numbers;
asserts nothing.

    .venv/bin/python bench/store_postgres.py [--before CHECKOUT] [--rounds N]

Starts a private PostgreSQL (scripts/postgres-up, in a folder under /tmp, on a free
loopback port; fsync and synchronous_commit on, as holmd's durable appends need) and stops
it at the end (scripts/postgres-down). Durable appends, one entry a call, from 64
concurrent writers on one trace and from 64 writers on a trace each, on the local store and
on the postgres store (its blobs as files: these entries spill none). Also PostgreSQL's
own commit time, and where the time goes: holmd's CPU and PostgreSQL's (every process of
the cluster, from /proc) per entry, and the WAL flushes (`pg_stat_wal.wal_sync`) per commit.
And the read path: `read` (a page of 50 entries) and `info`, one call at a time, p50, with
asyncpg's reset of each pooled connection given back (what holm did before) and without it
(holm's `pool_reset`), in turns.

`--before CHECKOUT` (an older revision's files, e.g. `git archive HEAD~3 holm bench | tar
-x -C /tmp/before`) measures the postgres store of that revision and of this one in turns,
each in a process of its own, N rounds (default 3), on the same PostgreSQL, so that both
meet the same load: this machine's commit time swings tenfold within a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

# `--holm CHECKOUT` (a child of `--before`): that checkout's holm is the one measured.
HOLM = Path(sys.argv[sys.argv.index("--holm") + 1]) if "--holm" in sys.argv else None
sys.path.insert(0, str(HOLM or Path(__file__).resolve().parents[1]))
sys.path.insert(1, str(Path(__file__).resolve().parent))

import asyncpg  # noqa: E402
from proc_cpu import cpu_seconds  # noqa: E402
from store import WRITERS, click, in_turns  # noqa: E402

from holm.events import LocalStore, TraceStore  # noqa: E402
from holm.events.objects import FileObjects  # noqa: E402
from holm.events.postgres import PostgresStore  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def commit_latency_ms(url: str, rounds: int = 300) -> float:
    """The median time of one small INSERT committed on its own: PostgreSQL's WAL flush."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS bench_probe (n int)")
        times = []
        for n in range(rounds):
            start = time.perf_counter()
            await conn.execute("INSERT INTO bench_probe VALUES ($1)", n)
            times.append((time.perf_counter() - start) * 1000)
        await conn.execute("DROP TABLE bench_probe")
    finally:
        await conn.close()
    return statistics.median(times)


async def wal_syncs(url: str) -> int:
    """The WAL flushes the cluster has made (a backend's count lands when it ends)."""
    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval("SELECT wal_sync FROM pg_stat_wal"))
    finally:
        await conn.close()


def postmaster(url_file: Path) -> int:
    return int((url_file.parent / "data" / "postmaster.pid").read_text().split()[0])


async def measure(
    store: TraceStore, *, traces: int, per_writer: int, url: str | None, server: int | None
) -> dict[str, float]:
    """Entries per second from WRITERS writers, one entry a call, and where the time went."""
    await store.append("box_warm", [click(0)])  # opened before the clock starts
    syncs = await wal_syncs(url) if url else 0

    async def writer(number: int) -> None:
        trace = f"box_{number % traces}"
        for i in range(per_writer):
            await store.append(trace, [click(i)])

    commits = getattr(store, "commits", 0)
    server_cpu = cpu_seconds([server])[0] if server else 0.0
    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(writer(n) for n in range(WRITERS)))
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
    server_cpu = cpu_seconds([server])[0] - server_cpu if server else 0.0
    commits = getattr(store, "commits", 0) - commits
    await store.close()
    await asyncio.sleep(0.5)  # the writer's backend has ended, its WAL counts landed
    total = WRITERS * per_writer
    return {
        "rate": total / took,
        "total": total,
        "took": took,
        "per_commit": total / max(commits, 1),
        "cpu_us": cpu / total * 1e6,
        "server_cpu_us": server_cpu / total * 1e6,
        "syncs_per_commit": (await wal_syncs(url) - syncs) / max(commits, 1) if url else 0,
    }


def row(name: str, traces: int, figures: dict[str, float]) -> str:
    line = (
        f"{name:<9} {traces:>2} trace(s): {figures['rate']:>9,.0f} entries/s"
        f"  {figures['per_commit']:>5.1f} appends/commit"
        f"  CPU/entry holmd {figures['cpu_us']:>5.1f} µs"
    )
    if figures["server_cpu_us"]:
        line += (
            f", PostgreSQL {figures['server_cpu_us']:>5.1f} µs"
            f"  {figures['syncs_per_commit']:.2f} WAL flushes/commit"
        )
    return line + f"  ({figures['total']:,.0f} in {figures['took']:.2f} s)"


def postgres_store(url: str, root: Path) -> PostgresStore:
    return PostgresStore(url, FileObjects(root), schema="bench_" + secrets.token_hex(4))


class ResetEach(PostgresStore):
    """The store as it was: asyncpg's reset (a round trip) of each connection given back."""

    pool_reset = None


async def read_path(url: str, root: Path, rounds: int = 5, calls: int = 200) -> None:
    """p50 of `read` and `info` one at a time on one trace, with asyncpg's reset and
    without, in turns (rounds), so both meet the same load."""
    schema = "bench_" + secrets.token_hex(4)
    objects = FileObjects(root / "reads")
    stores: dict[str, PostgresStore] = {
        "asyncpg's reset": ResetEach(url, objects, schema=schema),
        "no reset (holm)": PostgresStore(url, objects, schema=schema),
    }
    await stores["no reset (holm)"].append("box_read", [click(i) for i in range(100)])
    calls_of: dict[str, Callable[[PostgresStore], Awaitable[object]]] = {
        "read": lambda store: store.read("box_read", 49, 50),
        "info": lambda store: store.info("box_read"),
    }
    times: dict[tuple[str, str], list[float]] = {
        (name, call): [] for name in stores for call in calls_of
    }
    try:
        for store in stores.values():
            await store.info("box_read")  # the pool opened before the clock starts
        for _ in range(rounds):
            for name, store in stores.items():
                for call, run in calls_of.items():
                    for _ in range(calls):
                        start = time.perf_counter()
                        await run(store)
                        times[name, call].append((time.perf_counter() - start) * 1000)
    finally:
        for store in stores.values():
            await store.close()
    print(f"read path, one call at a time, {rounds} x {calls} calls each, p50:")
    for name in stores:
        figures = "  ".join(
            f"{call} {statistics.median(times[name, call]):.3f} ms" for call in calls_of
        )
        print(f"  {name:<16} {figures}")


async def one_case(url_file: Path, traces: int) -> None:
    """A child of `--before`: the postgres store of `--holm`, one shape; JSON on stdout."""
    url = url_file.read_text().strip()
    root = Path(tempfile.mkdtemp(prefix="holm-bench-store-", dir="/tmp"))
    try:
        figures = await measure(
            postgres_store(url, root),
            traces=traces,
            per_writer=600,
            url=url,
            server=postmaster(url_file),
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(figures))


def before_and_after(url_file: Path, before: Path, rounds: int) -> None:
    print(f"postgres store, {before} (before) and this checkout (after) in turns:")
    in_turns(
        before,
        rounds,
        lambda checkout, traces: [
            *(sys.executable, __file__, "--holm", str(checkout), "--case", str(traces)),
            *("--url-file", str(url_file)),
        ],
        row,
    )


async def side_by_side(url_file: Path, root: Path) -> None:
    url = url_file.read_text().strip()
    print(f"PostgreSQL now: one INSERT committed p50 {await commit_latency_ms(url):.2f} ms")
    print(f"durable appends, {WRITERS} concurrent writers, one entry per append:")
    rates: dict[tuple[str, int], float] = {}
    stores: list[tuple[str, Callable[[str], TraceStore]]] = [
        ("local", lambda place: LocalStore(root / place)),
        ("postgres", lambda place: postgres_store(url, root / place)),
    ]
    for traces in (1, 64):
        for name, make in stores:
            pg = name == "postgres"
            figures = await measure(
                make(f"{name}{traces}"),
                traces=traces,
                per_writer=600,
                url=url if pg else None,
                server=postmaster(url_file) if pg else None,
            )
            rates[name, traces] = figures["rate"]
            print(f"  {row(name, traces, figures)}")
    for traces in (1, 64):
        ratio = rates["postgres", traces] / rates["local", traces]
        print(f"  postgres / local on {traces} trace(s): {ratio:.2f}x")
    await read_path(url, root)
    print(f"PostgreSQL after: one INSERT committed p50 {await commit_latency_ms(url):.2f} ms")


def main(before: Path | None, rounds: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="holm-bench-store-", dir="/tmp"))
    # A folder of its own, which postgres-up gives to the `postgres` user.
    pg_dir = Path(tempfile.mkdtemp(prefix="holm-bench-pg-", dir="/tmp"))
    env = {**os.environ, "HOLM_PG_DIR": str(pg_dir), "HOLM_PG_PORT": str(free_port())}
    subprocess.run([str(REPO / "scripts/postgres-up")], env=env, check=True, capture_output=True)
    try:
        asyncio.run(side_by_side(pg_dir / "url", root))
        if before is not None:
            before_and_after(pg_dir / "url", before, rounds)
    finally:
        env["HOLM_PG_PURGE"] = "1"
        subprocess.run([str(REPO / "scripts/postgres-down")], env=env, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(pg_dir, ignore_errors=True)


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="an older revision's files to compare")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--holm", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--case", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case is not None:
        asyncio.run(one_case(args.url_file, args.case))
    else:
        main(None if args.before is None else args.before.resolve(), args.rounds)


if __name__ == "__main__":
    cli()
