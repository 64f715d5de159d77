"""The agent's DevTools client (devtools_wire.py) against aiohttp's server, an independent
WebSocket and HTTP implementation: messages of every length class both ways, pings, a
server's close, fragments, and the HTTP endpoints' answers; and, against a browser faked on
blocking sockets, that the tab watch reads what already came before a listing trusts its
count. Real Chromium is driven through it by tests/pages."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import socket
import struct
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import WSMsgType, web

from holm.agent.browser.devtools_wire import Unreachable, WebSocket, request
from holm.agent.browser.tab_watch import TabWatch

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Serve = Callable[[dict[str, Handler]], Awaitable[int]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    runners: list[web.AppRunner] = []

    async def start(routes: dict[str, Handler]) -> int:
        app = web.Application()
        for path, handler in routes.items():
            app.router.add_route("*", path, handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port: int = runner.addresses[0][1]
        return port

    yield start
    for runner in runners:
        await runner.cleanup()


async def echo(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse(max_msg_size=0)
    await ws.prepare(request)
    async for message in ws:
        if message.type == WSMsgType.TEXT:
            await ws.send_str(message.data)
    return ws


SIZES = [0, 1, 125, 126, 65535, 65536, 3 * 1024 * 1024 + 7]


async def test_text_of_every_length_goes_and_comes_back(serve: Serve) -> None:
    port = await serve({"/ws": echo})
    ws = await WebSocket.connect(f"ws://127.0.0.1:{port}/ws")
    messages = aiter(ws)
    for size in SIZES:
        # Not ASCII only: lengths are of the UTF-8 bytes.
        text = ("é" * size)[: size // 2] + "x" * (size - size // 2)
        await ws.send_str(text)
        assert await anext(messages) == text
    await ws.close()


async def test_a_ping_is_answered_and_a_close_ends_the_messages(serve: Serve) -> None:
    seen: list[tuple[WSMsgType, bytes]] = []

    async def pinger(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=False)
        await ws.prepare(request)
        await ws.ping(b"are you there")
        message = await ws.receive()
        seen.append((message.type, message.data))
        await ws.send_str(json.dumps({"id": 1}))
        await ws.close()
        return ws

    port = await serve({"/ws": pinger})
    ws = await WebSocket.connect(f"ws://127.0.0.1:{port}/ws")
    assert [json.loads(m) async for m in ws] == [{"id": 1}]
    assert seen == [(WSMsgType.PONG, b"are you there")]
    await ws.close()


async def test_a_fragmented_message_is_one_message() -> None:
    async def fragments(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(_switching(await reader.readuntil(b"\r\n\r\n")))
        # A text frame that is not final, a pong between (control frames may come between
        # fragments), then the final continuation; then a close.
        writer.write(struct.pack("!BB", 0x01, 6) + b'{"id":')
        writer.write(struct.pack("!BB", 0x8A, 0))
        writer.write(struct.pack("!BB", 0x80, 3) + b" 7}")
        writer.write(struct.pack("!BBH", 0x88, 2, 1000))
        await writer.drain()
        await reader.read()
        writer.close()

    server = await asyncio.start_server(fragments, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        ws = await WebSocket.connect(f"ws://127.0.0.1:{port}/devtools/page/X")
        assert [json.loads(m) async for m in ws] == [{"id": 7}]
        await ws.close()


async def test_http_answers_come_with_their_status(serve: Serve) -> None:
    async def targets(request: web.Request) -> web.Response:
        if request.method != "PUT" and request.path == "/json/new":
            return web.Response(status=405, text="Using unsafe HTTP verb GET")
        return web.json_response([{"id": "A", "path": request.path_qs}])

    port = await serve({"/json/list": targets, "/json/new": targets})
    status, body = await request(port, "GET", "/json/list", timeout=5)
    assert (status, json.loads(body)) == (200, [{"id": "A", "path": "/json/list"}])
    status, body = await request(port, "PUT", "/json/new?about%3Ablank", timeout=5)
    assert (status, json.loads(body)[0]["path"]) == (200, "/json/new?about%3Ablank")
    assert (await request(port, "GET", "/json/new", timeout=5))[0] == 405
    assert (await request(port, "GET", "/nothing", timeout=5))[0] == 404


async def test_nobody_listening_is_unreachable(serve: Serve) -> None:
    port = await serve({})
    # A port that was just free: nobody listens there.
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    free = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(Unreachable):
        await request(free, "GET", "/json/list", timeout=5)
    with pytest.raises(Unreachable):
        await WebSocket.connect(f"ws://127.0.0.1:{free}/devtools/page/X")
    # An HTTP server that refuses the upgrade.
    with pytest.raises(Unreachable, match="refused"):
        await WebSocket.connect(f"ws://127.0.0.1:{port}/ws")


class _FakeBrowser(threading.Thread):
    """A browser's DevTools in a thread of its own, on blocking sockets: `/json/version`,
    then the browser's WebSocket, which answers target discovery and, once `go` is set,
    tells what the test asks (`told`)."""

    def __init__(self, told: list[dict[str, Any]]) -> None:
        super().__init__(daemon=True)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.go = threading.Event()
        self.told = told

    def run(self) -> None:
        with self.listener.accept()[0] as http:
            http.recv(65536)
            body = json.dumps(
                {"webSocketDebuggerUrl": f"ws://127.0.0.1:{self.port}/devtools/browser/B"}
            ).encode()
            http.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                % (len(body), body)
            )
        with self.listener.accept()[0] as ws:
            ws.sendall(_switching(ws.recv(65536)))
            ws.recv(65536)  # Target.setDiscoverTargets
            ws.sendall(_text('{"id": 1, "result": {}}'))
            self.go.wait(10)
            ws.sendall(b"".join(_text(json.dumps(message)) for message in self.told))
            self.go.clear()
            self.go.wait(10)


def _switching(head: bytes) -> bytes:
    """A server's answer to a client's WebSocket handshake `head` (RFC 6455)."""
    key = next(
        line.split(":", 1)[1].strip()
        for line in head.decode().split("\r\n")
        if line.lower().startswith("sec-websocket-key:")
    )
    accept = base64.b64encode(
        hashlib.sha1(key.encode() + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest()
    )
    return (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n"
    )


def _text(message: str) -> bytes:
    data = message.encode()
    return struct.pack("!BB", 0x81, len(data)) + data


# A page (tab) T attached on session S, as Chromium tells it; its main frame has its ID.
ATTACHED = {
    "method": "Target.attachedToTarget",
    "params": {"sessionId": "S", "targetInfo": {"targetId": "T", "type": "page"}},
}


def _on_page(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"method": method, "params": params, "sessionId": "S"}


# What changes a tab listing: a target's change, and a navigation of a page's main frame
# begun (DevTools' /json/list shows the new address from then on) or committed; not a
# navigation of a frame inside the page.
@pytest.mark.parametrize(
    ("told", "changes"),
    [
        ([{"method": "Target.targetInfoChanged", "params": {}}], 1),
        ([ATTACHED, _on_page("Page.frameStartedNavigating", {"frameId": "T"})], 1),
        ([ATTACHED, _on_page("Page.frameNavigated", {"frame": {"id": "T"}})], 1),
        (
            [
                ATTACHED,
                _on_page("Page.frameStartedNavigating", {"frameId": "F"}),
                _on_page("Page.frameNavigated", {"frame": {"id": "F", "parentId": "T"}}),
            ],
            0,
        ),
    ],
    ids=["target changed", "navigation begun", "navigation committed", "a frame inside"],
)
async def test_a_watch_reads_what_already_came_before_a_listing_trusts_its_count(
    told: list[dict[str, Any]], changes: int
) -> None:
    browser = _FakeBrowser(told)
    browser.start()
    watch = TabWatch()
    watching = asyncio.create_task(watch.watch(browser.port))
    try:
        async with asyncio.timeout(10):
            while not watch.live:
                await asyncio.sleep(0.01)
        assert await watch.caught_up()
        before = watch.changes

        browser.go.set()
        # The loop is held: the message lands on the socket, and nobody reads it yet.
        time.sleep(0.2)
        assert watch.changes == before

        assert await watch.caught_up()
        assert watch.changes == before + changes
        assert watch.messages == len(told) + 1
    finally:
        browser.go.set()
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
        browser.listener.close()
