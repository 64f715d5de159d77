"""Figures of the postgres trace store beside the local store, in one run. Prints numbers;
asserts nothing.

    .venv/bin/python bench/store_postgres.py

Starts a private PostgreSQL (scripts/postgres-up, in a folder under /tmp, on a free
loopback port; fsync and synchronous_commit on, as holmd's durable appends need) and stops
it at the end (scripts/postgres-down). Durable appends, one entry a call, from 64
concurrent writers on one trace and from 64 writers on a trace each, on the local store and
on the postgres store (its blobs as files: these entries spill none). Also PostgreSQL's
own commit time, for what bounds a closed loop of 64 writers.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asyncpg
from store import WRITERS, click

from holm.events import LocalStore, TraceStore
from holm.events.objects import FileObjects
from holm.events.postgres import PostgresStore

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


async def appends(name: str, store: TraceStore, *, traces: int, per_writer: int) -> float:
    """Entries per second from WRITERS writers, one entry a call."""
    await store.traces()  # opened before the clock starts

    async def writer(number: int) -> None:
        trace = f"box_{number % traces}"
        for i in range(per_writer):
            await store.append(trace, [click(i)])

    commits = getattr(store, "commits", 0)
    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(writer(n) for n in range(WRITERS)))
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
    commits = getattr(store, "commits", 0) - commits
    await store.close()
    total = WRITERS * per_writer
    rate = total / took
    print(
        f"  {name:<9} {traces:>2} trace(s): {rate:>9,.0f} entries/s"
        f"  {total / max(commits, 1):>5.1f} appends/commit  {cpu / total * 1e6:>5.1f} µs CPU/append"
        f"  ({total:,} in {took:.2f} s)"
    )
    return rate


async def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="holm-bench-store-", dir="/tmp"))
    # A folder of its own, which postgres-up gives to the `postgres` user.
    pg_dir = Path(tempfile.mkdtemp(prefix="holm-bench-pg-", dir="/tmp"))
    env = {**os.environ, "HOLM_PG_DIR": str(pg_dir), "HOLM_PG_PORT": str(free_port())}
    subprocess.run([str(REPO / "scripts/postgres-up")], env=env, check=True, capture_output=True)
    try:
        url = (pg_dir / "url").read_text().strip()
        print(f"PostgreSQL now: one INSERT committed p50 {await commit_latency_ms(url):.2f} ms")
        print(f"durable appends, {WRITERS} concurrent writers, one entry per append:")
        rates: dict[tuple[str, int], float] = {}
        stores: list[tuple[str, Callable[[str], TraceStore]]] = [
            ("local", lambda place: LocalStore(root / place)),
            (
                "postgres",
                lambda place: PostgresStore(
                    url, FileObjects(root / place), schema="bench_" + secrets.token_hex(4)
                ),
            ),
        ]
        for traces in (1, 64):
            for name, make in stores:
                store = make(f"{name}{traces}")
                rates[name, traces] = await appends(name, store, traces=traces, per_writer=600)
        for traces in (1, 64):
            ratio = rates["postgres", traces] / rates["local", traces]
            print(f"  postgres / local on {traces} trace(s): {ratio:.2f}x")
    finally:
        env["HOLM_PG_PURGE"] = "1"
        subprocess.run([str(REPO / "scripts/postgres-down")], env=env, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(pg_dir, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
