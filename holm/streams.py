"""Byte streams joined to each other: what a relay does between a client and a box, or a
library that wants a socket (aiohttp's connector) and a stream that is none (an exec
through a Docker Engine's API, a WebSocket to another holmd)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Coroutine
from typing import Any

# A byte stream, both ways.
Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]
CHUNK = 1 << 20


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy `reader` to `writer` until the reader ends, then end the writer's side; each
    chunk is drained before the next is read (a slow side holds back the other, not
    memory)."""
    while chunk := await reader.read(CHUNK):
        writer.write(chunk)
        await writer.drain()
    if writer.can_write_eof():
        with contextlib.suppress(OSError, RuntimeError):
            writer.write_eof()


async def close_stream(stream: Stream) -> None:
    writer = stream[1]
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()


async def until_first(
    *work: Coroutine[Any, Any, None], timeout: float | None = None
) -> set[asyncio.Task[None]]:
    """Run the directions of a relay (and whatever else may end it: a stop, a deadline)
    until the first ends or fails, or `timeout` passes; then cancel the others and wait
    until they are gone, so that nothing of the relay outlives it. The tasks that ended
    first, for the caller to read their failure."""
    tasks = [asyncio.ensure_future(part) for part in work]
    try:
        done, _ = await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
    return done


async def splice(a: Stream, b: Stream) -> None:
    """Pump `a` and `b` into each other until either ends or fails, then close both: a
    relay has no use for a half-open stream, and a box that keeps its side open must not
    keep the other."""
    try:
        await until_first(pump(a[0], b[1]), pump(b[0], a[1]))
    finally:
        await close_stream(a)
        await close_stream(b)


async def stream_pair(limit: int = 1 << 16) -> tuple[Stream, socket.socket]:
    """A stream whose other end is a connected socket, for a library that takes a socket
    (`loop.create_unix_connection(sock=…)`): what is written to one is read from the
    other."""
    ours, theirs = socket.socketpair()
    try:
        stream = await asyncio.open_unix_connection(sock=ours, limit=limit)
    except BaseException:
        ours.close()
        theirs.close()
        raise
    return stream, theirs


__all__ = ["CHUNK", "Stream", "close_stream", "pump", "splice", "stream_pair", "until_first"]
