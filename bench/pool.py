"""The warm pool: `POST /v1/boxes` → a `ready` answer, for a box taken from the pool and
for a cold one of the same spec (the default: 1280×800 with Chromium), p50 over N each, one
after the other, through holmd's app (HTTP on 127.0.0.1, the durable local store, real
local boxes). Figures of the run before (bench/last_run.py) are printed beside the new
ones.

    .venv/bin/python bench/pool.py [N] [DISPLAY_BASE]      (default 5 boxes, displays :520…)
    .venv/bin/python bench/pool.py --burst N [DISPLAY_BASE]

`--burst N`: N creates at once, cold (no pool) and then pooled (HOLM_POOL=default:N, its N
spares waited for first): p50 and p99 from `POST /v1/boxes` to each `ready` answer, how many
failed, and the loop's longest hold during the burst; then, pooled, while the pool boots N
spares again, `GET /v1/boxes/{id}` on the burst's boxes every 50 ms: its p50 and p99 and
the loop's longest hold (the refill must not starve the requests of the boxes in use).

Cold boxes come first, from a server without a pool; then a server with HOLM_POOL=default:1,
whose spare is waited for before each create (a refill boots while the next is measured
only in real use, where creates come faster than boots).

Beside each, the longest the server's event loop was held up during those creates (and
the removals and refills between them): a ticker on the same loop asks to wake every
millisecond, and the figure is its latest wake-up. Every other box's requests wait that
long behind a create.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from last_run import keep, previous

from holm.adapters.local.runtime import LocalRuntime
from holm.config import load_config, parse_pool, server_id_of
from holm.events import LocalStore
from holm.http.app import create_app
from holm.http.routing import ENGINE

CONFIRM = {"x-holm-confirm-delete": "true"}


class LoopLag:
    """The latest a ticker on the running loop woke, in seconds past its time."""

    TICK_S = 0.001

    def __init__(self) -> None:
        self.most = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + self.TICK_S
            await asyncio.sleep(self.TICK_S)
            self.most = max(self.most, loop.time() - due)

    def __enter__(self) -> LoopLag:
        self._task = asyncio.get_running_loop().create_task(self._tick())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


async def creates(
    state: Path, display_base: int, n: int, pool: str, lag: LoopLag | None = None
) -> list[float]:
    """Seconds from `POST /v1/boxes` to its `ready` answer, for `n` boxes in turn; with
    `lag`, the loop's latest wake-up meanwhile is kept in it."""
    app, runtime, store = local_server(state, display_base, pool, 20)
    client = TestClient(TestServer(app))
    await client.start_server()
    took = []
    try:
        engine = app[ENGINE]
        pool_of = engine.pool
        with lag or LoopLag():
            for _ in range(n):
                if pool_of is not None:
                    await pool_of.filled()
                began = time.perf_counter()
                answer = await client.post("/v1/boxes", json={})
                body: dict[str, Any] = await answer.json()
                took.append(time.perf_counter() - began)
                assert body["state"] == "ready", body
                await client.delete(f"/v1/boxes/{body['id']}", headers=CONFIRM)
    finally:
        await client.close()
        await runtime.close()
        await store.close()
    return took


def local_server(state: Path, display_base: int, pool: str, count: int) -> tuple[Any, Any, Any]:
    """holmd's app on the local runtime and store (`pool`: HOLM_POOL), not yet started."""
    config = load_config(
        {},
        state_dir=str(state),
        storage_backend="local",
        default_runtime="local",
        server_auth="none",
        schedule="external",
        pool=parse_pool(pool),
    )
    store = LocalStore(state)
    runtime = LocalRuntime(
        state / "boxes", server_id_of(state), display_base=display_base, display_count=count
    )
    return create_app(config, runtimes={"local": runtime}, store=store), runtime, store


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def burst(state: Path, display_base: int, n: int, pooled: bool) -> dict[str, float]:
    """`n` creates at once; with `pooled`, on a pool of `n` spares, then the refill."""
    app, runtime, store = local_server(state, display_base, f"default:{n}" if pooled else "", 3 * n)
    client = TestClient(TestServer(app))
    await client.start_server()
    figures: dict[str, float] = {}
    made: list[str] = []
    try:
        engine = app[ENGINE]
        pool_of = engine.pool
        if pool_of is not None:
            await pool_of.filled()

        async def create() -> float | None:
            began = time.perf_counter()
            answer = await client.post("/v1/boxes", json={})
            body: dict[str, Any] = await answer.json()
            if answer.status != 200 or body.get("state") != "ready":
                print(f"    a create failed: {answer.status} {body}")
                return None
            made.append(body["id"])
            return time.perf_counter() - began

        with LoopLag() as lag:
            took = await asyncio.gather(*(create() for _ in range(n)))
        ready = [seconds for seconds in took if seconds is not None]
        figures |= {"failed": n - len(ready), "loop": lag.most}
        if ready:
            figures |= {"p50": quantile(ready, 0.5), "p99": quantile(ready, 0.99)}
        if pool_of is not None and made:
            figures |= await refill_beside_requests(client, pool_of, made)
    finally:
        for box_id in made:
            await client.delete(f"/v1/boxes/{box_id}", headers=CONFIRM)
        await client.close()
        await runtime.close()
        await store.close()
    return figures


async def refill_beside_requests(client: Any, pool_of: Any, made: list[str]) -> dict[str, float]:
    """`GET /v1/boxes/{id}` on the boxes in use every 50 ms while the pool refills."""
    times: list[float] = []
    with LoopLag() as lag:
        refill = asyncio.ensure_future(pool_of.filled())
        began = time.perf_counter()
        while not refill.done():
            for box_id in made[:4]:
                start = time.perf_counter()
                answer = await client.get(f"/v1/boxes/{box_id}")
                await answer.read()
                times.append(time.perf_counter() - start)
            await asyncio.sleep(0.05)
        await refill
    return {
        "refill": time.perf_counter() - began,
        "get p50": quantile(times, 0.5),
        "get p99": quantile(times, 0.99),
        "refill loop": lag.most,
    }


async def bursts(n: int, display_base: int) -> None:
    state = Path(tempfile.mkdtemp(prefix="hpool-", dir="/tmp"))
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average before: {load} ({os.cpu_count()} cpus; others' work counts in it)")
    try:
        cold = await burst(state / "cold", display_base, n, pooled=False)
        pooled = await burst(state / "pooled", display_base, n, pooled=True)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    now = {f"cold {key}": value for key, value in cold.items()}
    now |= {f"pooled {key}": value for key, value in pooled.items()}
    before = previous(f"pool-burst-{n}")
    print(f"{n} × POST /v1/boxes at once → ready          this run   run before")
    for key, label in (
        ("pooled p50", "pooled p50 (goal ≤ 100 ms)"),
        ("pooled p99", "pooled p99 (goal ≤ 250 ms)"),
        ("pooled loop", "loop held up at most, pooled (≤ 20)"),
        ("cold p50", "cold p50"),
        ("cold p99", "cold p99"),
        ("cold loop", "loop held up at most, cold (≤ 20)"),
        ("pooled refill", "pooled: the refill took"),
        ("pooled get p50", "  GET /v1/boxes/{id} meanwhile, p50"),
        ("pooled get p99", "  GET /v1/boxes/{id} meanwhile, p99"),
        ("pooled refill loop", "  loop held up at most meanwhile"),
    ):
        print(f"  {label:<40} {ms(now.get(key))}   {ms(before.get(key))}")
    for name in ("pooled", "cold"):
        print(f"  {name} creates that failed: {now.get(f'{name} failed', 0):.0f} of {n}")
    keep(f"pool-burst-{n}", now)


def ms(seconds: float | None) -> str:
    return "—".rjust(10) if seconds is None else f"{seconds * 1000:7.1f} ms"


async def main(n: int, display_base: int) -> None:
    state = Path(tempfile.mkdtemp(prefix="hpool-", dir="/tmp"))
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average before: {load} ({os.cpu_count()} cpus; others' work counts in it)")
    lags = {"cold": LoopLag(), "pooled": LoopLag()}
    try:
        cold = await creates(state / "cold", display_base, n, "", lags["cold"])
        pooled = await creates(state / "pooled", display_base, n, "default:1", lags["pooled"])
    finally:
        shutil.rmtree(state, ignore_errors=True)
    now = {"pooled": statistics.median(pooled), "cold": statistics.median(cold)}
    now |= {f"{name} loop lag": lag.most for name, lag in lags.items()}
    before = previous("pool")
    print(f"POST /v1/boxes → ready, p50 of {n}    this run   run before")
    for name, label in (
        ("pooled", "pooled (goal ≤ 100 ms)"),
        ("cold", "cold"),
        ("pooled loop lag", "loop held up at most, pooled"),
        ("cold loop lag", "loop held up at most, cold"),
    ):
        print(f"  {label:<30} {ms(now[name])}   {ms(before.get(name))}")
    spread = f"{ms(min(pooled)).strip()} to {ms(max(pooled)).strip()}"
    print(f"  pooled, min to max             {spread}")
    keep("pool", now)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--burst"]:
        asyncio.run(bursts(int(args[1]), int(args[2]) if len(args) > 2 else 520))
    else:
        asyncio.run(main(int(args[0]) if args else 5, int(args[1]) if len(args) > 1 else 520))
