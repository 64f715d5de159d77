"""The box's DevTools, for holmd's relay: a Unix socket in the box's run folder (which only
holmd and the box's uid can open) whose every connection the agent joins to Chromium's
DevTools port on the box's own 127.0.0.1. No TCP port is opened outside the box; holmd
relays users to this socket only with a short-lived token (docs/security.md)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

SOCKET_NAME = "devtools.sock"


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


async def bridge(run_dir: Path, port: int) -> asyncio.AbstractServer:
    """Serve `run_dir/devtools.sock`, each connection joined to 127.0.0.1:`port`."""

    async def join(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    path = run_dir / SOCKET_NAME
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    server = await asyncio.start_unix_server(join, path=str(path))
    os.chmod(path, 0o600)
    return server
