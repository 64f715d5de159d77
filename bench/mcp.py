"""MCP against REST on the same real box, in one run; prints figures, asserts nothing.

    .venv/bin/python bench/mcp.py [--rounds 300]

holmd runs in its own process (bench/http_api.py's server: the local runtime, a real box
with Chromium on its screen, the durable local store, 127.0.0.1); this process is the
client, over one keep-alive connection each way:
- a click: a REST batch of one `click` against the MCP `click` tool over Streamable HTTP
  (the `mcp` SDK's own client), both recorded as an `acted` entry, fsynced;
- an unchanged screen: REST `GET …/frame?have=` against the MCP `screenshot` tool with
  `have` (the goals: an MCP click p50 under 5 ms, at most 1 ms over REST; an unchanged
  screenshot under 8 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp

BENCH = Path(__file__).resolve().parent
# This file's name shadows the `mcp` package when it runs as a script: its folder goes to
# the end of the import path, after the installed packages.
if sys.path and Path(sys.path[0]).resolve() == BENCH:
    del sys.path[0]
sys.path.insert(0, str(BENCH.parent))
sys.path.append(str(BENCH))

from http_api import CONFIRM, percentile, served  # noqa: E402

Work = Callable[[int], Awaitable[object]]


async def timed(rounds: int, work: Work) -> list[float]:
    times = []
    for n in range(rounds + 30):
        began = time.perf_counter()
        await work(n)
        if n >= 30:
            times.append((time.perf_counter() - began) * 1000)
    return times


def line(name: str, times: list[float]) -> str:
    p50, p95 = statistics.median(times), percentile(times, 0.95)
    return f"{name:44} p50 {p50:6.2f} ms   p95 {p95:6.2f} ms"


async def bench(base: str, rounds: int) -> None:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with aiohttp.ClientSession() as rest:
        async with rest.post(f"{base}/v1/boxes", json={}) as response:
            box = (await response.json())["id"]
        screen = f"{base}/v1/boxes/{box}/screens/0"
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http,
            streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            await mcp.initialize()

            async def rest_click(n: int) -> object:
                body = {"actions": [{"type": "click", "at": {"x": 10 + n % 100, "y": 400}}]}
                async with rest.post(f"{screen}/actions", json=body) as response:
                    return await response.read()

            async def mcp_click(n: int) -> object:
                at = {"x": 10 + n % 100, "y": 400}
                return await mcp.call_tool("click", {"box": box, "at": at})

            have = ""
            unchanged = 0

            async def rest_still(n: int) -> object:
                nonlocal have, unchanged
                if n == 0:
                    # The screen as the clicks left it: what the still rounds must match.
                    async with rest.get(f"{screen}/frame") as response:
                        have = (await response.json())["hash"]
                async with rest.get(f"{screen}/frame", params={"have": have}) as response:
                    unchanged += (await response.json())["unchanged"]
                return None

            async def mcp_still(n: int) -> object:
                nonlocal unchanged
                answer = await mcp.call_tool("screenshot", {"box": box, "have": have})
                unchanged += '"unchanged":true' in str(answer.content[0]).replace(" ", "")
                return answer

            # Interleaved in rounds, so that both see the same load.
            figures: dict[str, list[float]] = {}
            for _ in range(3):
                for name, work in [
                    ("click, REST batch of one", rest_click),
                    ("click, MCP tool", mcp_click),
                    ("unchanged screen, REST frame?have=", rest_still),
                    ("unchanged screen, MCP screenshot have=", mcp_still),
                ]:
                    figures.setdefault(name, []).extend(await timed(rounds // 3, work))
            for name, times in figures.items():
                print(line(name, times))
            still = sum(len(t) for name, t in figures.items() if "unchanged" in name)
            print(f"answered unchanged: {unchanged} of {still + 2 * 30 * 3}")
        async with rest.delete(f"{base}/v1/boxes/{box}", headers=CONFIRM):
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    with served("h5m-bench-", ["--chromium"]) as (base, _, _):
        asyncio.run(bench(base, args.rounds))


if __name__ == "__main__":
    main()
