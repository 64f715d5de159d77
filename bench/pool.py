"""The warm pool: `POST /v1/boxes` → a `ready` answer, for a box taken from the pool and
for a cold one of the same spec (the default: 1280×800 with Chromium), p50 over N each, one
after the other, through holmd's app (HTTP on 127.0.0.1, the durable local store, real
local boxes). Figures of the run before (bench/last_run.py) are printed beside the new
ones.

    .venv/bin/python bench/pool.py [N] [DISPLAY_BASE]      (default 5 boxes, displays :520…)

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
from holm.http.routing import SLOT

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
        state / "boxes", server_id_of(state), display_base=display_base, display_count=20
    )
    app = create_app(config, runtimes={"local": runtime}, store=store)
    client = TestClient(TestServer(app))
    await client.start_server()
    took = []
    try:
        engine = app[SLOT].engine
        assert engine is not None
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
    asyncio.run(main(int(args[0]) if args else 5, int(args[1]) if len(args) > 1 else 520))
