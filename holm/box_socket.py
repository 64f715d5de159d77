"""Connecting to a socket a box serves in its run folder: its agent's, its viewers', its
DevTools'.

The box writes that folder, so it may put a symlink where its socket was, or swap one in
between a check and a connect. holmd resolves the name on the host, as root: a link would
lead it to any socket of the host (the Docker Engine's, another box's agent or viewer) and
the relays would hand that to whoever holds the box's ticket. So the socket's own name is
opened without following a link, must be a socket, and is connected through that open file
(`/proc/self/fd/N`): what is connected is what was checked. The folders above it are
holmd's, which no box can change.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def box_socket(path: str | Path) -> Iterator[str]:
    """A name to connect to that is the socket at `path` itself, never what a link there
    points to; good while the block runs. `OSError` when `path` is not a socket."""
    fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            raise OSError(errno.ENOTSOCK, f"{path} is not a socket of the box")
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


async def open_box_connection(
    path: str | Path, **kwargs: Any
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """`asyncio.open_unix_connection` to the box's socket at `path` (see `box_socket`)."""
    with box_socket(path) as name:
        return await asyncio.open_unix_connection(name, **kwargs)


__all__ = ["box_socket", "open_box_connection"]
