"""What the computer-use endpoints add to a REST batch; prints figures, asserts nothing.

    .venv/bin/python bench/computer_use.py [--clicks 300] [--no-desktop]

A model's click, as Anthropic's tool emits it (`POST …/computer/anthropic` with
`{"action": "left_click", "coordinate": [x, y]}`, which answers the screenshot), timed
against the very REST batch it becomes (`POST …/actions` with one `click` and
`want: ["frame"]`), in one run, one request at a time, the two alternated so that a slow
spell of the machine falls on both (goal: the endpoint adds at most 0.5 ms at p50). Then
the same on the in-memory runtime double, where nothing but HTTP, the engine and the
translation is timed. The server is holmd's app in this process (aiohttp's test server on
127.0.0.1) over a real local box (X displays from :580) and the durable local store.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

DISPLAY_BASE = 580
DISPLAY_COUNT = 10
CONFIRM = {"x-holm-confirm-delete": "true"}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def compare(runtime_name: str, clicks: int) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from holm.adapters.base import Runtime
    from holm.adapters.local.runtime import LocalRuntime
    from holm.adapters.memory.runtime import MemoryRuntime
    from holm.config import load_config, server_id_of
    from holm.events import LocalStore
    from holm.http.app import create_app

    state_dir = Path(tempfile.mkdtemp(prefix="h5a-cu-", dir="/tmp"))
    config = load_config(
        {},
        state_dir=str(state_dir),
        default_runtime=runtime_name,
        storage_backend="local",
        schedule="external",
        server_auth="none",
    )
    runtime: Runtime
    if runtime_name == "local":
        runtime = LocalRuntime(
            state_dir / "boxes",
            server_id_of(state_dir),
            display_base=DISPLAY_BASE,
            display_count=DISPLAY_COUNT,
        )
    else:
        runtime = MemoryRuntime(server_id=server_id_of(state_dir))
    store = LocalStore(state_dir)
    app = create_app(config, runtimes={runtime_name: runtime}, store=store)
    try:
        async with TestClient(TestServer(app)) as client:
            async with client.post("/v1/boxes", json={}) as response:
                box = (await response.json())["id"]
            screen = f"/v1/boxes/{box}/screens/0"

            async def timed(url: str, body: dict[str, Any]) -> float:
                began = time.perf_counter()
                async with client.post(url, json=body) as response:
                    await response.read()
                    assert response.status == 200, await response.text()
                return (time.perf_counter() - began) * 1000

            endpoint: list[float] = []
            batch: list[float] = []
            for n in range(clicks + 30):
                x, y = 600 + n % 50, 700
                model: dict[str, Any] = {"action": "left_click", "coordinate": [x, y]}
                click = {"type": "click", "at": {"x": x, "y": y}}
                rest: dict[str, Any] = {"actions": [click], "want": ["frame"]}
                pair = [
                    (endpoint, f"{screen}/computer/anthropic", model),
                    (batch, f"{screen}/actions", rest),
                ]
                for times, url, body in pair if n % 2 else reversed(pair):
                    took = await timed(url, body)
                    if n >= 30:  # the first ones warm the connection and the box up
                        times.append(took)
            await client.delete(f"/v1/boxes/{box}", headers=CONFIRM)
    finally:
        await store.close()
        if isinstance(runtime, LocalRuntime):
            await runtime.close()
        shutil.rmtree(state_dir, ignore_errors=True)
    p50s = statistics.median(endpoint), statistics.median(batch)
    print(
        f"{runtime_name} box, a click and its screenshot ({clicks} of each, alternated): "
        f"computer/anthropic p50 {p50s[0]:.2f} ms, p95 {percentile(endpoint, 0.95):.2f} ms; "
        f"the REST batch p50 {p50s[1]:.2f} ms, p95 {percentile(batch, 0.95):.2f} ms; "
        f"the endpoint adds {p50s[0] - p50s[1]:+.2f} ms at p50"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=300)
    parser.add_argument("--no-desktop", action="store_true", help="the in-memory double only")
    args = parser.parse_args()
    if not args.no_desktop:
        asyncio.run(compare("local", args.clicks))
    asyncio.run(compare("memory", args.clicks))


if __name__ == "__main__":
    main()
