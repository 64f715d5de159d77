"""One WebSocket relayed to another, message by message, text as text and binary as
binary: a DevTools session to its box's Chromium (routes/cdp.py), and a request another
holmd serves (forwarding.py)."""

from __future__ import annotations

import contextlib

import aiohttp
from aiohttp import web

from holm.streams import until_first

Socket = web.WebSocketResponse | aiohttp.ClientWebSocketResponse


async def pump_messages(source: Socket, sink: Socket) -> None:
    """Send on each message of `source` until it closes (or says something that is no
    data: a close, an error)."""
    async for message in source:
        if message.type == aiohttp.WSMsgType.TEXT:
            await sink.send_str(message.data)
        elif message.type == aiohttp.WSMsgType.BINARY:
            await sink.send_bytes(message.data)
        else:
            break


async def relay_sockets(client: Socket, upstream: Socket, timeout: float | None = None) -> None:
    """Relay both ways until either side closes, or `timeout` passes; then close both."""
    try:
        await until_first(
            pump_messages(client, upstream), pump_messages(upstream, client), timeout=timeout
        )
    finally:
        with contextlib.suppress(Exception):
            await upstream.close()
        with contextlib.suppress(Exception):
            await client.close()


__all__ = ["Socket", "pump_messages", "relay_sockets"]
