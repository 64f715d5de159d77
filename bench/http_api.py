"""Benchmarks of holmd's REST API; prints figures, asserts nothing.

    .venv/bin/python bench/http_api.py [--clicks 500] [--seconds 30] [--clients 64] [--boxes 8]
        [--frames 300] [--idle-seconds 20] [--chromium] [--breakdown]

The server runs in its own process (this script started with `--serve`), on 127.0.0.1,
with the local runtime (real boxes, X displays from :240) and the durable local store in a
temporary state dir; the load comes from this process over loopback.

1. One click through HTTP: a batch of one `click`, answered once its `acted` entry is
   fsynced (target: p50 < 2 ms). To tell where the time goes, the same click is also timed
   in this process on the in-memory runtime double, with the memory store (HTTP and engine
   alone) and with the local store (plus the fsync), without a desktop.
2. Many clients on a few boxes for a bounded time: errors (must be 0), requests/s, and that
   every trace is contiguous afterwards.
3. `GET /v1/health` requests/s with one server process.
4. An unchanged frame (`GET …/frame?have=`, target: p50 ≤ 1 ms), answered from the tile
   hashes DAMAGE keeps, beside the same screen asked as a region (`x`, `y`, `width`,
   `height`), which the tile grid answers too. (A screen read and hashed whole, as every
   unchanged frame was before DAMAGE: bench/agent.py.)
5. What idle boxes cost: the CPU of holmd and every process of its boxes over
   `--idle-seconds`, per box (target: under 1 % of a core for a box with Chromium on a
   still page).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp
from holmd_weight import above_boxes

DISPLAY_BASE = 240
DISPLAY_COUNT = 20
CONFIRM = {"x-holm-confirm-delete": "true"}


def serve(
    state_dir: Path,
    port: int,
    chromium: bool,
    breakdown: bool,
    displays: int = DISPLAY_COUNT,
    frame_before_steps: bool = True,
    memory_store: bool = False,
) -> None:
    """The server process: holmd's app over real local boxes and the local store (the
    memory store with `memory_store`: nothing durable, bench/peer_cua.py compares); without
    `frame_before_steps`, as `HOLM_FRAME_BEFORE_STEPS=off` (bench/click_path.py compares)."""
    from aiohttp import web

    if breakdown:
        sys.path.append(str(Path(__file__).resolve().parent))
        import breakdown as parts

        parts.instrument()

    from holm.adapters.local.runtime import LocalRuntime
    from holm.config import load_config, server_id_of
    from holm.http.app import create_app

    config = load_config(
        {},
        state_dir=str(state_dir),
        storage_backend="memory" if memory_store else "local",
        server_addr=f"127.0.0.1:{port}",
        schedule="external",
        # The bench's clients send no token; the server listens on loopback.
        server_auth="none",
        frame_before_steps="on" if frame_before_steps else "off",
    )
    runtime = LocalRuntime(
        state_dir / "boxes",
        server_id_of(state_dir),
        display_base=DISPLAY_BASE,
        display_count=displays,
        chromium=chromium,
    )
    app = create_app(config, runtimes={"local": runtime})
    if breakdown:
        parts.add_to(app)
    with above_boxes():
        web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


async def click_without_desktop(clicks: int) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from holm.adapters.memory.runtime import MemoryRuntime
    from holm.config import load_config, server_id_of
    from holm.events import LocalStore, MemoryStore
    from holm.events.store import TraceStore
    from holm.http.app import create_app

    for name in ("memory", "local"):
        state_dir = Path(tempfile.mkdtemp(prefix="h5a-bench-", dir="/tmp"))
        config = load_config(
            {},
            state_dir=str(state_dir),
            default_runtime="memory",
            schedule="external",
            server_auth="none",
        )
        store: TraceStore = LocalStore(state_dir) if name == "local" else MemoryStore()
        runtime = MemoryRuntime(server_id=server_id_of(state_dir))
        app = create_app(config, runtimes={"memory": runtime}, store=store)
        async with TestClient(TestServer(app)) as client:
            async with client.post("/v1/boxes", json={}) as response:
                box = (await response.json())["id"]
            url = f"/v1/boxes/{box}/screens/0/actions"
            times = []
            for n in range(clicks + 50):
                body = {"actions": [{"type": "click", "at": {"x": n % 100, "y": 10}}]}
                began = time.perf_counter()
                async with client.post(url, json=body) as response:
                    await response.read()
                if n >= 50:
                    times.append((time.perf_counter() - began) * 1000)
        await store.close()
        shutil.rmtree(state_dir, ignore_errors=True)
        print(
            f"one click, in-memory runtime double, {name} store: "
            f"p50 {statistics.median(times):.2f} ms, p95 {percentile(times, 0.95):.2f} ms"
        )


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def click_latency(
    session: aiohttp.ClientSession, base: str, box: str, clicks: int, breakdown: bool = False
) -> None:
    url = f"{base}/v1/boxes/{box}/screens/0/actions"
    times = []
    for n in range(clicks + 50):
        if breakdown and n == 50:
            # What the warm-up clicks spent is not counted.
            async with session.get(f"{base}/bench/breakdown") as response:
                await response.read()
        body = {"actions": [{"type": "click", "at": {"x": 10 + n % 100, "y": 10}}]}
        began = time.perf_counter()
        async with session.post(url, json=body) as response:
            await response.read()
            assert response.status == 200, await response.text()
        if n >= 50:  # the first ones warm the connection and the agent up
            times.append((time.perf_counter() - began) * 1000)
    print(
        f"one click through HTTP, durable: p50 {statistics.median(times):.2f} ms, "
        f"p95 {percentile(times, 0.95):.2f} ms, p99 {percentile(times, 0.99):.2f} ms "
        f"({clicks} clicks, one at a time)"
    )
    if breakdown:
        query = {"clicks": clicks}
        async with session.get(f"{base}/bench/breakdown", params=query) as response:
            parts = await response.json()
        seen = f"p50 {statistics.median(times):.2f} ms, mean {statistics.mean(times):.2f} ms"
        print(f"where one click's time goes, per click (the client saw {seen}):")
        for name, part in parts.items():
            spent, calls = part["ms_per_click"], part["calls_per_click"]
            print(f"  {name:48} {spent:7.3f} ms  ({calls:.2f} calls)")


async def many_clients(
    session: aiohttp.ClientSession, base: str, boxes: list[str], clients: int, seconds: float
) -> None:
    counts = {"ok": 0, "errors": 0}
    deadline = time.monotonic() + seconds

    async def client(n: int) -> None:
        box = boxes[n % len(boxes)]
        url = f"{base}/v1/boxes/{box}/screens/0/actions"
        body = {"actions": [{"type": "click", "at": {"x": 5 + n, "y": 5}}]}
        while time.monotonic() < deadline:
            async with session.post(url, json=body) as response:
                await response.read()
                counts["ok" if response.status == 200 else "errors"] += 1

    began = time.monotonic()
    await asyncio.gather(*(client(n) for n in range(clients)))
    took = time.monotonic() - began
    contiguous = 0
    for box in boxes:
        seqs: list[int] = []
        after = -1
        while True:
            async with session.get(f"{base}/v1/boxes/{box}/trace?after={after}") as response:
                page = await response.json()
            seqs += [entry["seq"] for entry in page["entries"]]
            if not page["more"]:
                break
            after = page["next"]
        contiguous += seqs == list(range(len(seqs)))
    print(
        f"{clients} clients on {len(boxes)} boxes for {took:.0f} s: "
        f"{counts['ok'] / took:.0f} requests/s, {counts['errors']} errors, "
        f"{contiguous} of {len(boxes)} traces contiguous"
    )


async def health_rate(session: aiohttp.ClientSession, base: str, seconds: float) -> None:
    done = 0
    deadline = time.monotonic() + seconds

    async def client() -> None:
        nonlocal done
        while time.monotonic() < deadline:
            async with session.get(f"{base}/v1/health") as response:
                await response.read()
            done += 1

    began = time.monotonic()
    await asyncio.gather(*(client() for _ in range(32)))
    print(
        f"GET /v1/health: {done / (time.monotonic() - began):.0f} requests/s "
        "(one server process, 32 clients in one client process)"
    )


async def frame_latency(session: aiohttp.ClientSession, base: str, box: str, rounds: int) -> None:
    url = f"{base}/v1/boxes/{box}/screens/0/frame"

    async def unchanged(extra: dict[str, str | int]) -> list[float]:
        async with session.get(url, params=extra) as response:
            have = (await response.json())["hash"]
        times = []
        for n in range(rounds + 20):
            began = time.perf_counter()
            async with session.get(url, params={**extra, "have": have}) as response:
                answer = await response.json()
            if n >= 20:
                times.append((time.perf_counter() - began) * 1000)
        assert answer.get("unchanged"), answer
        return times

    async with session.get(f"{base}/v1/boxes/{box}") as response:
        desktop = (await response.json())["spec"]["desktop"]
    size = desktop.get("width") or 1280, desktop.get("height") or 800
    whole = {"x": 0, "y": 0, "width": size[0], "height": size[1]}
    tiles, region = await unchanged({}), await unchanged(whole)
    print(
        f"an unchanged frame through HTTP: p50 {statistics.median(tiles):.2f} ms, "
        f"p95 {percentile(tiles, 0.95):.2f} ms (DAMAGE: no pixel read); asked as a "
        f"region: p50 {statistics.median(region):.2f} ms, "
        f"p95 {percentile(region, 0.95):.2f} ms ({rounds} frames each)"
    )


async def idle_cpu(
    server: int, state_dir: Path, boxes: int, seconds: float, chromium: bool
) -> None:
    from holm.adapters.local.records import read_records

    sys.path.append(str(Path(__file__).resolve().parent))
    from proc_cpu import share_of_a_core

    # A moment for the watchers' first frames and the pages to settle.
    await asyncio.sleep(3)
    # The boxes outlive holmd, so they are not all under it: each from its outer bwrap.
    roots = [server] + [r.bwrap_pid for r in read_records(state_dir / "boxes") if r.bwrap_pid]
    share, processes = await share_of_a_core(roots, seconds)
    desktop = "Chromium on a still page" if chromium else "no Chromium"
    print(
        f"idle: holmd and its {boxes} boxes ({desktop}, {processes} processes) used "
        f"{share:.2f} % of a core over {seconds:.0f} s: {share / boxes:.2f} % a box"
    )


async def bench(args: argparse.Namespace, base: str, server: int, state_dir: Path) -> None:
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        boxes = []
        try:
            began = time.perf_counter()
            for _ in range(args.boxes):
                async with session.post(f"{base}/v1/boxes", json={}) as response:
                    created = await response.json()
                    assert response.status == 200, created
                    boxes.append(created["id"])
            desktop = "with Chromium" if args.chromium else "no Chromium"
            print(f"{args.boxes} boxes ({desktop}) ready in {time.perf_counter() - began:.1f} s")
            await idle_cpu(server, state_dir, args.boxes, args.idle_seconds, args.chromium)
            await frame_latency(session, base, boxes[0], args.frames)
            await click_latency(session, base, boxes[0], args.clicks, args.breakdown)
            await many_clients(session, base, boxes, args.clients, args.seconds)
            await health_rate(session, base, min(args.seconds, 10))
        finally:
            for box in boxes:
                async with session.delete(f"{base}/v1/boxes/{box}", headers=CONFIRM):
                    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--boxes", type=int, default=8)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--idle-seconds", type=float, default=20)
    parser.add_argument(
        "--chromium",
        action="store_true",
        help="boxes with Chromium on their screen, as holmd makes them (default: without)",
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="print where one click's time goes inside holmd (bench/breakdown.py)",
    )
    parser.add_argument(
        "--displays",
        type=int,
        default=DISPLAY_COUNT,
        help="X display numbers the server's boxes may take (bench/host.py fills the host)",
    )
    parser.add_argument("--serve", nargs=2, metavar=("STATE_DIR", "PORT"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--no-frame-before-steps", action="store_true", help=argparse.SUPPRESS
    )  # the server's, from bench/click_path.py --step-frames
    parser.add_argument(
        "--memory-store", action="store_true", help=argparse.SUPPRESS
    )  # the server's, from bench/peer_cua.py
    args = parser.parse_args()
    if args.serve:
        serve(
            Path(args.serve[0]),
            int(args.serve[1]),
            args.chromium,
            args.breakdown,
            args.displays,
            frame_before_steps=not args.no_frame_before_steps,
            memory_store=args.memory_store,
        )
        return
    flags = ["--chromium"] * args.chromium + ["--breakdown"] * args.breakdown
    with served("h5a-bench-", flags) as (base, state_dir, pid):
        asyncio.run(click_without_desktop(args.clicks))
        asyncio.run(bench(args, base, pid, state_dir))


@contextlib.contextmanager
def served(
    prefix: str, flags: list[str], checkout: Path | None = None
) -> Iterator[tuple[str, Path, int]]:
    """holmd in its own process (this script with `--serve` and `flags`) on a fresh state
    dir, once it answers: its URL, the state dir and its pid; ended after, with the boxes
    it left. bench/mcp_calls.py and bench/viewer.py measure against it too. With `checkout` (a
    git worktree of other code), that checkout's holmd and agent, for a before/after in
    one run."""
    state_dir = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    port = _free_port()
    script, env = Path(__file__).resolve(), None
    if checkout is not None:
        script = checkout.resolve() / "bench" / script.name
        env = {**os.environ, "PYTHONPATH": str(checkout.resolve())}
    server = subprocess.Popen(
        [sys.executable, str(script), "--serve", str(state_dir), str(port), *flags],
        start_new_session=True,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        _wait_answering(base)
        yield base, state_dir, server.pid
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
        _end_boxes(state_dir)
        shutil.rmtree(state_dir, ignore_errors=True)


def add_against(parser: argparse.ArgumentParser) -> None:
    """The `--against DIR` of the benches that measure other code beside this one."""
    parser.add_argument(
        "--against",
        type=Path,
        metavar="DIR",
        help="a checkout of other code (e.g. a git worktree of main) whose holmd is measured "
        "beside this one's, in the same run",
    )


def served_sides(
    stack: contextlib.ExitStack,
    prefix: str,
    flags: list[str],
    against: Path | None,
    other_flags: list[str] | None = None,
) -> list[tuple[str, str, int]]:
    """This checkout's holmd and, with `against`, that checkout's beside it (`other_flags`
    when given): each one's name, URL and pid, ended with `stack`."""
    base, _, pid = stack.enter_context(served(prefix, flags))
    sides = [("this checkout", base, pid)]
    if against is not None:
        flags = flags if other_flags is None else other_flags
        base, _, pid = stack.enter_context(served(prefix, flags, against))
        sides.append((against.resolve().name, base, pid))
    return sides


def _wait_answering(base: str) -> None:
    for _ in range(300):
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{base}/v1/health", timeout=5) as response,
        ):
            if response.status == 200:
                return
        time.sleep(0.1)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _end_boxes(state_dir: Path) -> None:
    """Boxes outlive the server: end any a failed run left behind."""
    from holm.adapters.local.runtime import LocalRuntime

    async def end() -> None:
        runtime = LocalRuntime(state_dir / "boxes", "bench-cleaner", display_base=DISPLAY_BASE)
        for box in await runtime.list():
            await runtime.delete(box.box_id)
        await runtime.close()

    asyncio.run(end())


if __name__ == "__main__":
    main()
