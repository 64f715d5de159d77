"""The agent served over pipes another process of the box hands it: the remote docker
runtime's relay (holm/adapters/docker/exec_stream.py), an exec whose stdin and stdout are
the engine's stream, connects to `PIPES_SOCKET` and passes those two descriptors
(`SCM_RIGHTS`) with one byte; the agent then reads requests from the one and writes answers
to the other itself, and the relay only waits. Each message so crosses one process fewer
each way (the relay's read and write, a wake-up of its own): bench/exec_hops.py measures
what that hop cost.

The connection ends when the stdin pipe does (holmd closed the stream) or the relay's
socket does (the exec was ended); the agent then closes both pipes and the socket, and the
relay, which keeps the exec alive meanwhile (the engine ends an exec's stream once its
process has ended), ends too. The socket is private as `agent.sock` is (0600): only the
box's root reaches it, and a connection that passes anything but two descriptors is
closed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

log = logging.getLogger("holm.agent")

PIPES_SOCKET = "pipes.sock"
# What serves one connection: the agent's `Connection(...).serve()`.
Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Coroutine[Any, Any, None]]


async def listen_for_pipes(path: Path, serve: Serve, limit: int) -> asyncio.Task[None]:
    """Listen on `path` (made private) and serve each pair of pipes handed over it, until
    the task answered is cancelled; `OSError` when it cannot be bound."""
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old = os.umask(0o177)
        try:
            listener.bind(str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        listener.listen()
        listener.setblocking(False)
    except OSError:
        listener.close()
        raise
    return asyncio.create_task(_accept(listener, serve, limit))


async def _accept(listener: socket.socket, serve: Serve, limit: int) -> None:
    loop = asyncio.get_running_loop()
    served: set[asyncio.Task[None]] = set()
    try:
        while True:
            conn, _ = await loop.sock_accept(listener)
            task = asyncio.create_task(_serve_handed(conn, serve, limit))
            served.add(task)
            task.add_done_callback(served.discard)
    finally:
        listener.close()
        for task in served:
            task.cancel()


async def _serve_handed(conn: socket.socket, serve: Serve, limit: int) -> None:
    loop = asyncio.get_running_loop()
    fds: list[int] = []
    try:
        fds = await _receive_fds(conn)
        if len(fds) != 2:
            log.warning("a connection to %s handed %d descriptors, not 2", PIPES_SOCKET, len(fds))
            return
        stdin, stdout = fds
        fds = []
        reader = asyncio.StreamReader(limit=limit)
        reading, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(stdin, "rb", buffering=0)
        )
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()),
            os.fdopen(stdout, "wb", buffering=0),
        )
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        serving = asyncio.create_task(serve(reader, writer))
        # The relay's socket says nothing more: its end (the exec ended) ends the service.
        relay_gone = loop.create_task(loop.sock_recv(conn, 1))
        try:
            await asyncio.wait({serving, relay_gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (serving, relay_gone):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            writer.close()
            reading.close()
            # The transports close their pipes on the loop's next turn: let them, so that
            # the relay, which ends when this socket closes, ends after the pipes did.
            await asyncio.sleep(0)
    finally:
        for fd in fds:
            os.close(fd)
        conn.close()


async def _receive_fds(conn: socket.socket) -> list[int]:
    """The descriptors of the one byte the relay sends first (none when it sends none)."""
    loop = asyncio.get_running_loop()
    got: asyncio.Future[list[int]] = loop.create_future()

    def readable() -> None:
        try:
            _, fds, _, _ = socket.recv_fds(conn, 1, 4)
        except BlockingIOError:
            return
        except OSError as exc:
            got.set_exception(exc)
        else:
            got.set_result(list(fds))
        loop.remove_reader(conn.fileno())

    loop.add_reader(conn.fileno(), readable)
    try:
        return await got
    finally:
        loop.remove_reader(conn.fileno())


__all__ = ["PIPES_SOCKET", "listen_for_pipes"]
