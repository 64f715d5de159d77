"""The box's DevTools, for holmd's relay: a Unix socket in the box's run folder (which only
holmd and the box's uid can open) per screen, whose every connection the agent joins to
that screen's Chromium's DevTools port on the box's own 127.0.0.1: the port of the
browser as it is then (supervisor.py starts it again, on a new port, when it ends). No TCP
port is opened outside the box; holmd relays users to this socket only with a short-lived
token (docs/security.md)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from holm.errors import HolmError

SOCKET_NAME = "devtools.sock"


def socket_name(screen: int) -> str:
    """The first screen's socket keeps the name it always had; the others are numbered."""
    return SOCKET_NAME if screen == 0 else f"devtools-{screen}.sock"


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def bridge(
    run_dir: Path, screen: int, port_of: Callable[[], Awaitable[int]]
) -> asyncio.AbstractServer:
    """Serve the screen's socket in `run_dir`, each connection joined to 127.0.0.1 on the
    port `port_of` gives (waiting, as it does, for a browser that is starting again)."""

    async def join(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            port = await port_of()
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        except (OSError, HolmError):
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    path = run_dir / socket_name(screen)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    server = await asyncio.start_unix_server(join, path=str(path))
    os.chmod(path, 0o600)
    return server
