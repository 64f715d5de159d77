"""A box's raw streams for another holmd: `GET /v1/boxes/{id}/streams/{kind}?screen=N`, a
WebSocket relayed to `Engine.open_stream` (the box's agent, a screen's VNC server, a screen's
DevTools), binary messages both ways, for a front server that has this server as its
runtime (provider `holm`, docs/runtimes.md) and records the box's trace itself.

What crosses is not recorded here: a step through the agent's stream is in the trace of
the server that sent it, not this one's. So the server token only (a workspace's key is
refused): a workspace's steps must all land in a trace it can read. Back-pressure both
ways, as the viewer relay: each WebSocket send is awaited, and the next message is read
only once the last one's bytes were drained into the box's stream.
"""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import WSMsgType, web

from holm.wire.api import StreamQuery
from holm.wire.runtime import StreamKind

from ..routing import Route, engine_of, query_of

CHUNK = 1 << 20
# The agent's largest frame (a 64 MiB file, base64) crosses as many messages of `CHUNK`.
MAX_MESSAGE = 4 << 20
_KINDS: dict[str, StreamKind] = {"agent": "agent", "vnc": "vnc", "devtools": "devtools"}


async def box_stream(request: web.Request) -> web.WebSocketResponse:
    box_id = request.match_info["id"]
    kind = _KINDS[request.path.rsplit("/", 1)[1]]
    query = query_of(request, StreamQuery)
    reader, writer = await engine_of(request).open_stream(box_id, kind, query.screen, limit=CHUNK)
    ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE, compress=False)
    try:
        await ws.prepare(request)
    except BaseException:
        writer.close()
        raise

    async def to_box() -> None:
        async for message in ws:
            if message.type != WSMsgType.BINARY:
                return
            writer.write(message.data)
            await writer.drain()

    async def from_box() -> None:
        while chunk := await reader.read(CHUNK):
            await ws.send_bytes(chunk)

    tasks = [asyncio.ensure_future(to_box()), asyncio.ensure_future(from_box())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
        await ws.close()
    return ws


ROUTES = [
    Route(
        "GET",
        f"/v1/boxes/{{id}}/streams/{kind}",
        box_stream,
        f"The box's {kind} stream as a WebSocket, for a front holmd; the server token only",
        query=StreamQuery,
        auth="server",
    )
    for kind in _KINDS
]
