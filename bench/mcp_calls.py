"""MCP against REST on the same real box, in one run; prints figures, asserts nothing.

    .venv/bin/python bench/mcp_calls.py [--rounds 300] [--against DIR] [--breakdown]

holmd runs in its own process (bench/http_api.py's server: the local runtime, a real box
with Chromium on its screen, the durable local store, 127.0.0.1); this process is the
client, over one keep-alive connection each way:
- a click: a REST batch of one `click` against the MCP `click` tool over Streamable HTTP,
  called with the `mcp` SDK's own client and with a plain one (an aiohttp POST of the
  JSON-RPC message, in a session of its own), all recorded as an `acted` entry, fsynced;
- an unchanged screen: REST `GET …/frame?have=` against the MCP `screenshot` tool with
  `have` (the goals: an MCP click p50 under 5 ms, at most 1 ms over REST; an unchanged
  screenshot under 8 ms);
- first, the bytes of the `tools/list` answer, which a model pays in every request (the
  goal: at most 20,000).

`--against DIR` serves a second holmd from another worktree (old code, e.g. main) and
measures both in interleaved rounds, so a change is judged under one load. `--breakdown`
then prints where a click's time goes, REST beside MCP: the layers inside holmd
(bench/breakdown.py: the bridge, the SDK's session manager, transport, dispatcher and
runner, holm's decoding, the engine) and, on this side, the SDK client's HTTP exchange
within the whole call.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from http_api import CONFIRM, add_against, percentile, served_sides  # noqa: E402

Work = Callable[[int], Awaitable[object]]
# A protocol revision of the initialize handshake, which the plain client speaks.
PLAIN_VERSION = "2025-11-25"


def rpc(method: str, params: dict[str, Any], id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


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
    return f"{name:72} p50 {p50:6.2f} ms   p95 {p95:6.2f} ms"


def own_cpu(pid: int) -> float:
    """The CPU seconds process `pid` itself (not its children: the box) has spent."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Target:
    """One holmd under test: a box on it, a REST session and an MCP session to it."""

    def __init__(self, label: str, base: str, pid: int) -> None:
        self.label = label
        self.base = base
        self.pid = pid
        self.have = ""
        self.unchanged = 0

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[Target]:
        import httpx2
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async with aiohttp.ClientSession() as rest:
            async with rest.post(f"{self.base}/v1/boxes", json={}) as response:
                self.box = (await response.json())["id"]
            self.rest = rest
            self.screen = f"{self.base}/v1/boxes/{self.box}/screens/0"
            try:
                async with (
                    httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http,
                    streamable_http_client(f"{self.base}/mcp", http_client=http) as (read, write),
                    ClientSession(read, write) as mcp,
                ):
                    await mcp.initialize()
                    self.mcp = mcp
                    await self._plain_session()
                    yield self
            finally:
                async with rest.delete(f"{self.base}/v1/boxes/{self.box}", headers=CONFIRM):
                    pass

    async def _plain_session(self) -> None:
        """An MCP session of the plain client: Streamable HTTP spoken with an aiohttp POST
        per message (what a client in any language does), beside the SDK's client."""
        hello = {
            "protocolVersion": PLAIN_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        }
        headers = {"Accept": "application/json, text/event-stream"}
        async with self.rest.post(
            f"{self.base}/mcp", json=rpc("initialize", hello, 0), headers=headers
        ) as response:
            agreed = (await response.json())["result"]["protocolVersion"]
            headers["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
        headers["Mcp-Protocol-Version"] = agreed
        self.plain_headers = headers
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        async with self.rest.post(f"{self.base}/mcp", json=note, headers=headers) as response:
            assert response.status == 202, response.status

    async def tool_list_bytes(self) -> tuple[int, int]:
        """The bytes of the `tools/list` answer (what a model's client puts in every request
        to the model), and how many tools it lists."""
        body = {"jsonrpc": "2.0", "id": 0, "method": "tools/list"}
        async with self.rest.post(
            f"{self.base}/mcp", json=body, headers=self.plain_headers
        ) as response:
            raw = await response.read()
        return len(raw), len(json.loads(raw)["result"]["tools"])

    async def plain_call(self, n: int, tool: str, arguments: dict[str, Any]) -> Any:
        body = rpc("tools/call", {"name": tool, "arguments": arguments}, n)
        async with self.rest.post(
            f"{self.base}/mcp", json=body, headers=self.plain_headers
        ) as response:
            answer = await response.json()
        assert not answer["result"].get("isError"), answer
        return answer["result"]

    async def plain_click(self, n: int) -> object:
        return await self.plain_call(
            n, "click", {"box": self.box, "at": {"x": 10 + n % 100, "y": 400}}
        )

    async def plain_still(self, n: int) -> object:
        answer = await self.plain_call(n, "screenshot", {"box": self.box, "have": self.have})
        self.unchanged += '"unchanged":true' in str(answer["content"][0]).replace(" ", "")
        return answer

    async def rest_click(self, n: int) -> object:
        body = {"actions": [{"type": "click", "at": {"x": 10 + n % 100, "y": 400}}]}
        async with self.rest.post(f"{self.screen}/actions", json=body) as response:
            return await response.read()

    async def mcp_click(self, n: int) -> object:
        at = {"x": 10 + n % 100, "y": 400}
        return await self.mcp.call_tool("click", {"box": self.box, "at": at})

    async def rest_still(self, n: int) -> object:
        if n == 0:
            # The screen as the clicks left it: what the still rounds must match.
            async with self.rest.get(f"{self.screen}/frame") as response:
                self.have = (await response.json())["hash"]
        query = {"have": self.have}
        async with self.rest.get(f"{self.screen}/frame", params=query) as response:
            self.unchanged += (await response.json())["unchanged"]
        return None

    async def mcp_still(self, n: int) -> object:
        answer = await self.mcp.call_tool("screenshot", {"box": self.box, "have": self.have})
        self.unchanged += '"unchanged":true' in str(answer.content[0]).replace(" ", "")
        return answer

    def works(self) -> list[tuple[str, Work]]:
        return [
            ("click, REST batch of one", self.rest_click),
            ("click, MCP tool (the SDK's client)", self.mcp_click),
            ("click, MCP tool (a plain HTTP client)", self.plain_click),
            ("unchanged screen, REST frame?have=", self.rest_still),
            ("unchanged screen, MCP screenshot have= (the SDK's client)", self.mcp_still),
            ("unchanged screen, MCP screenshot have= (a plain client)", self.plain_still),
        ]


async def bench(targets: list[Target], rounds: int, breakdown: bool) -> None:
    async with contextlib.AsyncExitStack() as stack:
        for target in targets:
            await stack.enter_async_context(target.opened())
        for target in targets:
            size, tools = await target.tool_list_bytes()
            print(f"{target.label}: tools/list {size} bytes for {tools} tools (the goal: 20,000)")
        # Interleaved in rounds of about 100 calls, so that every figure sees the same load.
        turns = max(3, rounds // 100)
        figures: dict[str, list[float]] = {}
        # The CPU time holmd's own process and this one (the client) spent per call: what
        # the load of other processes on the machine hardly moves.
        cpu: dict[str, list[float]] = {}
        for _ in range(turns):
            for target in targets:
                for name, work in target.works():
                    label = f"{target.label}: {name}" if len(targets) > 1 else name
                    served, client = own_cpu(target.pid), time.process_time()
                    figures.setdefault(label, []).extend(await timed(rounds // turns, work))
                    spent = cpu.setdefault(label, [0.0, 0.0, 0])
                    spent[0] += own_cpu(target.pid) - served
                    spent[1] += time.process_time() - client
                    spent[2] += rounds // turns + 30
        for name, times in figures.items():
            served, client, calls = cpu[name]
            print(
                f"{line(name, times)}   CPU/call: holmd {served / calls * 1000:5.2f} ms, "
                f"client {client / calls * 1000:5.2f} ms"
            )
        for target in targets:
            still = 3 * turns * (rounds // turns + 30)
            print(f"{target.label}: answered unchanged: {target.unchanged} of {still}")
        if breakdown:
            await where_the_time_goes(targets[0], rounds)
    if breakdown:
        await client_floor(rounds)


SERVED = "server: the request, middlewares included"
ENGINE = "engine.run_batch (all of the batch)"
WHOLE = "client: the whole call"
DERIVED_ORDER = [
    "= holmd beyond engine.run_batch",
    "= the HTTP client and the wire beyond holmd",
    "= the SDK client beyond its HTTP exchange",
]
DERIVED = set(DERIVED_ORDER)


async def where_the_time_goes(target: Target, clicks: int) -> None:
    """Where one click's time goes, REST beside MCP: the parts inside holmd (bench/breakdown.py,
    read after a run of clicks of one kind), and on this side the HTTP exchange (the SDK
    client's is httpx's `send`) within the call."""
    import httpx2

    exchange: list[float] = []
    send = httpx2.AsyncClient.send

    async def timed_send(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return await send(*args, **kwargs)
        finally:
            exchange.append((time.perf_counter() - began) * 1000)

    httpx2.AsyncClient.send = timed_send  # type: ignore[method-assign]
    columns: dict[str, dict[str, float]] = {}
    for name, work in target.works()[:2]:
        await timed(0, work)  # what the warm-up spent is not counted
        async with target.rest.get(f"{target.base}/bench/breakdown") as response:
            await response.read()
        exchange.clear()
        times = await timed(clicks, work)
        query = {"clicks": len(times) + 30}
        async with target.rest.get(f"{target.base}/bench/breakdown", params=query) as response:
            parts = {part: value["ms_per_click"] for part, value in (await response.json()).items()}
        whole = statistics.mean(times)
        served = parts.get(SERVED, 0.0)
        parts[f"{WHOLE} (mean)"] = whole
        parts["= holmd beyond engine.run_batch"] = served - parts.get(ENGINE, 0.0)
        if exchange:
            sent = statistics.mean(exchange)
            parts["client: its HTTP exchange (httpx send, mean)"] = sent
            parts["= the SDK client beyond its HTTP exchange"] = whole - sent
            parts["= the HTTP client and the wire beyond holmd"] = sent - served
        else:
            parts["= the HTTP client and the wire beyond holmd"] = whole - served
        columns[name] = parts
    httpx2.AsyncClient.send = send  # type: ignore[method-assign]
    found = {part for parts in columns.values() for part in parts}
    names = sorted(found - DERIVED) + [part for part in DERIVED_ORDER if part in found]
    print(f"where one click's time goes, ms per click (mean; load {os.getloadavg()[0]:.1f}):")
    print(f"  {'':56} {'REST':>8} {'MCP':>8}")
    for part in names:
        cells = [columns[name].get(part) for name in columns]
        shown = " ".join("       -" if cell is None else f"{cell:8.3f}" for cell in cells)
        print(f"  {part:56} {shown}")


async def client_floor(rounds: int) -> None:
    """What the clients alone cost: the SDK's `call_tool` and an aiohttp POST against an
    answer made in advance by a server in this process, which does nothing else. Their
    difference is the part of MCP's cost over REST that no change to holmd can remove."""
    import json

    import httpx2
    from aiohttp import web
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def canned_mcp(request: web.Request) -> web.Response:
        if request.method != "POST":
            return web.Response(status=405)
        message = await request.json()
        headers = {"mcp-session-id": "canned"}
        if "id" not in message:
            return web.Response(status=202, headers=headers)
        result: dict[str, Any] = {"content": [{"type": "text", "text": '{"x":1,"y":2}'}]}
        if message["method"] == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "canned", "version": "0"},
            }
        elif message["method"] == "tools/list":
            result = {"tools": [{"name": "click", "inputSchema": {"type": "object"}}]}
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        return web.json_response(answer, headers=headers, dumps=json.dumps)

    async def canned_rest(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"results": [{"ok": True, "value": {"x": 1, "y": 2}}]})

    app = web.Application()
    app.router.add_route("*", "/mcp", canned_mcp)
    app.router.add_post("/rest", canned_rest)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.SockSite(runner, _bound_socket())
    await site.start()
    base = site.name
    try:
        async with (
            aiohttp.ClientSession() as rest,
            httpx2.AsyncClient() as http,
            streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            await mcp.initialize()

            async def rest_post(n: int) -> object:
                body = {"actions": [{"type": "click", "at": {"x": n % 100, "y": 400}}]}
                async with rest.post(f"{base}/rest", json=body) as response:
                    return await response.read()

            async def mcp_call(n: int) -> object:
                return await mcp.call_tool("click", {"box": "b", "at": {"x": n % 100, "y": 400}})

            figures: dict[str, list[float]] = {}
            for _ in range(3):
                for name, work in [
                    ("REST, aiohttp", rest_post),
                    ("MCP, the SDK's client", mcp_call),
                ]:
                    figures.setdefault(name, []).extend(await timed(rounds // 3, work))
    finally:
        await runner.cleanup()
    print("the clients alone, against a canned answer in this process:")
    for name, times in figures.items():
        print("  " + line(name, times))


def _bound_socket() -> Any:
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    add_against(parser)
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="then print where one click's time goes, REST beside MCP (bench/breakdown.py)",
    )
    args = parser.parse_args()
    flags = ["--chromium"] + ["--breakdown"] * args.breakdown
    with contextlib.ExitStack() as stack:
        # Only this side is broken down: the other runs without the timers.
        sides = served_sides(stack, "h5m-bench-", flags, args.against, ["--chromium"])
        targets = [Target(name, base, pid) for name, base, pid in sides]
        asyncio.run(bench(targets, args.rounds, args.breakdown))
        print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
