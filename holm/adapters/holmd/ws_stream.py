"""A byte stream over a WebSocket of binary messages (the other holmd's stream relay), as
an `asyncio` stream: what the stream's writer writes is sent as messages, in order, and
each message received is fed straight into its reader.

No socket pair and no pumping task stand between the stream and the WebSocket (each would
cost every message a hop through the event loop and two system calls): the transport under
the writer sends, and one task reads the WebSocket into the reader. A WebSocket has no
half-close, so the writer cannot write an end of file; closing the stream closes it.
"""

from __future__ import annotations

import asyncio
import contextlib

import aiohttp

from holm.streams import Stream

# Past this much written and not yet sent, the writer's `drain` waits.
HIGH_WATER = 1 << 20


class WsTransport(asyncio.Transport):
    def __init__(
        self,
        ws: aiohttp.ClientWebSocketResponse,
        protocol: asyncio.StreamReaderProtocol,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        super().__init__()
        self._ws = ws
        self._protocol = protocol
        self._loop = loop
        self._pending: list[bytes] = []
        self._size = 0
        self._sender: asyncio.Task[None] | None = None
        self._closing = False
        self._lost = False
        self._writing_paused = False
        self._reading = asyncio.Event()
        self._reading.set()
        self._reader = loop.create_task(self._read())

    # Sending

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing or self._lost or not data:
            return
        self._pending.append(bytes(data))
        self._size += len(data)
        if self._sender is None:
            self._sender = self._loop.create_task(self._send())
        if self._size > HIGH_WATER and not self._writing_paused:
            self._writing_paused = True
            self._protocol.pause_writing()

    async def _send(self) -> None:
        try:
            while self._pending:
                chunk = b"".join(self._pending)
                self._pending.clear()
                self._size = 0
                await self._ws.send_bytes(chunk)
                if self._writing_paused and self._size <= HIGH_WATER:
                    self._writing_paused = False
                    self._protocol.resume_writing()
        except Exception as exc:
            self._sender = None
            await self._end(exc)
            return
        self._sender = None
        if self._closing:
            await self._end(None)

    def get_write_buffer_size(self) -> int:
        return self._size

    def can_write_eof(self) -> bool:
        return False

    # Receiving

    async def _read(self) -> None:
        why: Exception | None = None
        try:
            async for message in self._ws:
                if message.type != aiohttp.WSMsgType.BINARY:
                    break
                await self._reading.wait()
                self._protocol.data_received(message.data)
        except Exception as exc:
            why = exc
        await self._end(why)

    def pause_reading(self) -> None:
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    def is_reading(self) -> bool:
        return self._reading.is_set()

    # Ending

    def is_closing(self) -> bool:
        return self._closing or self._lost

    def close(self) -> None:
        """Send what was written, then close the WebSocket."""
        if self._closing or self._lost:
            return
        self._closing = True
        if self._sender is None:
            self._loop.create_task(self._end(None))

    def abort(self) -> None:
        self._pending.clear()
        self._size = 0
        self._closing = True
        if self._sender is not None:
            self._sender.cancel()
            self._sender = None
        if not self._lost:
            self._loop.create_task(self._end(None))

    async def _end(self, why: Exception | None) -> None:
        if self._lost:
            return
        self._lost = True
        if self._reader is not asyncio.current_task():
            self._reader.cancel()
        with contextlib.suppress(Exception):
            await self._ws.close()
        self._protocol.connection_lost(why)


def ws_stream(ws: aiohttp.ClientWebSocketResponse, limit: int) -> Stream:
    """The stream over `ws` (its reader's limit `limit`); closing its writer closes `ws`."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    transport = WsTransport(ws, protocol, loop)
    protocol.connection_made(transport)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


__all__ = ["WsTransport", "ws_stream"]
