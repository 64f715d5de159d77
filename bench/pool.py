"""The warm pool: `POST /v1/boxes` → a `ready` answer, for a box taken from the pool and
for a cold one of the same spec (the default: 1280×800 with Chromium), p50 over N each, one
after the other, through holmd's app (HTTP on 127.0.0.1, the durable local store, real
local boxes). Figures of the run before (bench/last_run.py) are printed beside the new
ones.

    .venv/bin/python bench/pool.py [N] [DISPLAY_BASE]      (default 5 boxes, displays :520…)
    .venv/bin/python bench/pool.py --burst N [DISPLAY_BASE] [--against DIR | --base REV]
                                   [--rounds R] [--debug-loop]

`--burst N`: N creates at once, cold (no pool) and then pooled (HOLM_POOL=default:N, its N
spares waited for first): p50 and p99 from `POST /v1/boxes` to each `ready` answer, how many
failed, and the loop's longest hold during the burst; then, pooled, while the pool boots N
spares again, `GET /v1/boxes/{id}` on the burst's boxes every 50 ms: its p50 and p99 and
the loop's longest hold (the refill must not starve the requests of the boxes in use).
Each hold is split (loop_hold.py) into work on the loop, waiting for a core and asleep (the
GIL or a blocking call), for the worst hold and summed over the holds past 20 ms, beside
the CPU holmd's process and its loop's thread spent in each phase. With `--against DIR`
(a checkout) or `--base REV` (a git rev, written out of git), each burst runs in a process
of its own, this checkout's and the other's in turns (cold, then pooled; `--rounds` times),
their figures side by side; `--debug-loop` has asyncio log each callback over 20 ms.

Cold boxes come first, from a server without a pool; then a server with HOLM_POOL=default:1,
whose spare is waited for before each create (a refill boots while the next is measured
only in real use, where creates come faster than boots).

Beside each, the longest the server's event loop was held up during those creates (and
the removals and refills between them): a ticker on the same loop asks to wake every
millisecond, and the figure is its latest wake-up (loop_hold.py). Every other box's
requests wait that long behind a create.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from checkout import REPO, base_checkout, short
from holmd_weight import above_boxes
from last_run import keep, previous
from loop_hold import HELD_S, LoopLag

from holm.adapters.local.runtime import LocalRuntime
from holm.config import load_config, parse_pool, server_id_of
from holm.events import LocalStore
from holm.http.app import create_app
from holm.http.routing import ENGINE

CONFIRM = {"x-holm-confirm-delete": "true"}


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
        figures |= {"failed": n - len(ready)} | lag.figures("loop")
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
    } | lag.figures("refill loop")


async def burst_of(kind: str, n: int, display_base: int) -> dict[str, float]:
    """One burst (`kind`: cold or pooled) on a state dir of its own, figures named by kind."""
    state = Path(tempfile.mkdtemp(prefix="hpool-", dir="/tmp"))
    try:
        figures = await burst(state / kind, display_base, n, pooled=kind == "pooled")
    finally:
        shutil.rmtree(state, ignore_errors=True)
    return {f"{kind} {key}": value for key, value in figures.items()}


def burst_in(code: str, kind: str, n: int, display_base: int, debug_loop: bool) -> dict[str, float]:
    """One burst by the `holm` package in folder `code`, in a process of its own (its
    server, runtime and boxes' agents are that code's); the bench's code is this one's."""
    argv = [sys.executable, __file__, "--burst-one", kind, "--burst", str(n), str(display_base)]
    answer = subprocess.run(
        argv + (["--debug-loop"] if debug_loop else []),
        env={**os.environ, "PYTHONPATH": code},
        stdout=subprocess.PIPE,
        text=True,
        check=False,
        # A session of its own, so that its CPU weight is its own (`above_boxes`).
        start_new_session=True,
    )
    if answer.returncode != 0:
        raise SystemExit(f"the {kind} burst of {code} failed ({answer.returncode})")
    *said, last = answer.stdout.strip().splitlines()
    for line in said:  # what it said of creates that failed
        print(line, flush=True)
    figures: dict[str, float] = json.loads(last)
    return figures


# (figure, label, unit): a row of the burst's table.
ROWS: list[tuple[str, str, str]] = [
    ("pooled p50", "pooled p50 (goal ≤ 100 ms)", "ms"),
    ("pooled p99", "pooled p99 (goal ≤ 250 ms)", "ms"),
    ("pooled loop", "loop held up at most, pooled (≤ 20)", "ms"),
    ("cold p50", "cold p50", "ms"),
    ("cold p99", "cold p99", "ms"),
    ("cold loop", "loop held up at most, cold (≤ 20)", "ms"),
    ("pooled refill", "pooled: the refill took", "ms"),
    ("pooled get p50", "  GET /v1/boxes/{id} meanwhile, p50", "ms"),
    ("pooled get p99", "  GET /v1/boxes/{id} meanwhile, p99", "ms"),
    ("pooled refill loop", "  loop held up at most meanwhile", "ms"),
]
# Where each phase's holds went (loop_hold.py): its worst hold, and all over HELD_S.
PHASES = {"pooled loop": "pooled", "cold loop": "cold", "pooled refill loop": "refill"}
SPLIT = (("on loop", "on the loop"), ("waiting", "waiting for a core"), ("asleep", "asleep"))
for _prefix, _phase in PHASES.items():
    ROWS += [(f"{_prefix} {key}", f"{_phase}, worst hold: {what}", "ms") for key, what in SPLIT]
    over = f"{_phase}, holds over {HELD_S * 1000:.0f} ms"
    ROWS.append((f"{_prefix} holds over", f"{over}: how many", "count"))
    ROWS.append((f"{_prefix} over", f"{over}: in all", "ms"))
    ROWS += [(f"{_prefix} over {key}", f"{over}: {what}", "ms") for key, what in SPLIT]
    ROWS.append((f"{_prefix} wall", f"{_phase}: the phase took", "ms"))
    ROWS.append((f"{_prefix} process cpu", f"{_phase}: CPU of holmd (and the bench)", "ms"))
    ROWS.append((f"{_prefix} loop cpu", f"{_phase}:   of it, the loop's thread", "ms"))


async def bursts(n: int, display_base: int) -> None:
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average before: {load} ({os.cpu_count()} cpus; others' work counts in it)")
    now = await burst_of("cold", n, display_base)
    now |= await burst_of("pooled", n, display_base)
    before = previous(f"pool-burst-{n}")
    table(n, {"this run": [now], "run before": [before] if before else []})
    keep(f"pool-burst-{n}", now)


def compare(n: int, display_base: int, against: str, label: str, rounds: int, debug: bool) -> None:
    """This checkout's bursts and `against`'s, in turns, `rounds` of each kind."""
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average before: {load} ({os.cpu_count()} cpus; others' work counts in it)")
    sides = {"this checkout": str(REPO), label: against}
    runs: dict[str, list[dict[str, float]]] = {side: [{} for _ in range(rounds)] for side in sides}
    for turn in range(rounds):
        for kind in ("cold", "pooled"):
            for side, code in sides.items():
                print(f"round {turn + 1}: {kind}, {side}", flush=True)
                runs[side][turn] |= burst_in(code, kind, n, display_base, debug)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average after:  {load}")
    table(n, runs)
    keep(f"pool-burst-{n}", median_of(runs["this checkout"]))


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    keys = {key for run in runs for key in run}
    return {key: statistics.median(run[key] for run in runs if key in run) for key in keys}


def table(n: int, runs: dict[str, list[dict[str, float]]]) -> None:
    """Each figure's median over its runs, a column per side."""
    columns = {side: median_of(found) for side, found in runs.items()}
    rounds = max(len(found) for found in runs.values())
    head = "".join(f"{side[:16]:>18}" for side in columns)
    print(f"{n} × POST /v1/boxes at once → ready (median of {rounds}) {head}")
    for key, label, unit in ROWS:
        cells = [columns[side].get(key) for side in columns]
        if all(cell is None for cell in cells):
            continue
        shown = [count(cell) if unit == "count" else ms(cell) for cell in cells]
        print(f"  {label:<50}" + "".join(f"{cell:>18}" for cell in shown))
    for name in ("pooled", "cold"):
        failed = ", ".join(f"{c.get(f'{name} failed', 0):.0f}" for c in columns.values())
        print(f"  {name} creates that failed, of {n}: {failed}")


def count(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}"


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


def debug_loop() -> None:
    """asyncio's debug mode: each callback that ran over HELD_S is logged with its wall
    time (which counts a wait for a core as much as work)."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    loop = asyncio.get_running_loop()
    loop.set_debug(True)
    loop.slow_callback_duration = HELD_S


async def one_burst(kind: str, n: int, display_base: int, debug: bool) -> None:
    if debug:
        debug_loop()
    with above_boxes():
        print(json.dumps(await burst_of(kind, n, display_base)))


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, help="creates (default 5; with --burst: N)")
    parser.add_argument("display_base", nargs="?", type=int, default=520)
    parser.add_argument("--burst", type=int, metavar="N", help="N creates at once")
    parser.add_argument("--against", metavar="DIR", help="with --burst: a checkout to compare")
    parser.add_argument("--base", metavar="REV", help="with --burst: a git rev to compare")
    parser.add_argument("--rounds", type=int, default=1, help="with --against/--base")
    parser.add_argument("--debug-loop", action="store_true", help="log callbacks over 20 ms")
    parser.add_argument("--burst-one", choices=("cold", "pooled"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.burst is not None and options.n is not None:
        # `--burst N DISPLAY_BASE`: the one positional given is the display base.
        options.display_base = options.n
    return options


def run() -> None:
    options = arguments()
    if options.burst is None:
        with above_boxes():
            asyncio.run(main(options.n or 5, options.display_base))
    elif options.burst_one is not None:
        one_burst_of = one_burst(
            options.burst_one, options.burst, options.display_base, options.debug_loop
        )
        asyncio.run(one_burst_of)
    elif options.against is not None:
        against = str(Path(options.against).resolve())
        compare(
            options.burst,
            options.display_base,
            against,
            against,
            options.rounds,
            options.debug_loop,
        )
    elif options.base is not None:
        with tempfile.TemporaryDirectory(prefix="holm-base-") as old:
            base_checkout(options.base, Path(old))
            label = f"base {short(options.base)}"
            compare(
                options.burst, options.display_base, old, label, options.rounds, options.debug_loop
            )
    else:
        with above_boxes():
            asyncio.run(bursts(options.burst, options.display_base))


if __name__ == "__main__":
    run()
