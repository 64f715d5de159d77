"""The locks a runtime keeps per box: one for its lifecycle (create, pause, resume, stop,
start, delete run one at a time on a box) and one for connecting to its agent (callers
that find no connection make one, not one each)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class BoxLocks:
    def __init__(self) -> None:
        self._lifecycle: dict[str, asyncio.Lock] = {}
        self._connect: dict[str, asyncio.Lock] = {}

    @contextlib.asynccontextmanager
    async def lifecycle(self, box_id: str) -> AsyncIterator[None]:
        async with self._lifecycle.setdefault(box_id, asyncio.Lock()):
            yield

    def connect(self, box_id: str) -> asyncio.Lock:
        return self._connect.setdefault(box_id, asyncio.Lock())

    def forget(self, box_id: str) -> None:
        """Drop a deleted box's locks."""
        self._lifecycle.pop(box_id, None)
        self._connect.pop(box_id, None)


__all__ = ["BoxLocks"]
