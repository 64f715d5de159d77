"""What the viewer tests share: a TCP port that bridges to the viewer WebSocket (so a
plain RFB client, vncdotool, goes through holmd's relay exactly as noVNC does), and a
page whose title counts the clicks and keys it receives."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import aiohttp
from http_kit import Client

# A page that shows in its title (and so in its window's title) the clicks and keys it got.
PAGE_HTML = (
    "<title>c0k</title>"
    "<body style='margin:0;height:100vh;background:#fff'>"
    "<script>var c=0,k='';"
    "function u(){document.title='c'+c+'k'+k}"
    "document.onmousedown=function(){c++;u()};"
    "document.onkeydown=function(e){k+=e.key;u()};"
    "</script></body>"
)
PAGE_URL = "data:text/html," + quote(PAGE_HTML)


@contextlib.asynccontextmanager
async def bridge(client: Client, path: str) -> AsyncIterator[int]:
    """A port on 127.0.0.1 whose every connection is relayed to the WebSocket at `path`
    of the test server (binary frames), as websockify would do the other way."""
    pumps: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            ws = await client.ws_connect(path, protocols=("binary",))
        except aiohttp.WSServerHandshakeError:
            writer.close()
            return

        async def up() -> None:
            while data := await reader.read(65536):
                await ws.send_bytes(data)
            await ws.close()

        async def down() -> None:
            async for msg in ws:
                if msg.type == aiohttp.WSMsgType.BINARY:
                    writer.write(msg.data)
                    await writer.drain()
            writer.close()

        tasks = [asyncio.create_task(up()), asyncio.create_task(down())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        await ws.close()
        writer.close()

    def track(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.create_task(serve(reader, writer))
        pumps.add(task)
        task.add_done_callback(pumps.discard)

    server = await asyncio.start_server(track, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield port
    finally:
        server.close()
        for task in list(pumps):
            task.cancel()
        await server.wait_closed()


def vnc_do(port: int, steps: list[tuple[str, tuple[Any, ...]]]) -> None:
    """Connect vncdotool to `port` (blocking: call it in a thread), do `steps` (method
    name and arguments of vncdotool's client), and disconnect."""
    from vncdotool import api

    client = api.connect(f"127.0.0.1::{port}", timeout=30)
    try:
        for name, args in steps:
            getattr(client, name)(*args)
    finally:
        client.disconnect()
