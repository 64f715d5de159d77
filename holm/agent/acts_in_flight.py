"""The acts asked on each screen and not done yet, so that a batch's end is done after
them (`Desktop.end_batch`): the agent keeps its requests' tasks here, the agent's client
its calls' futures when the agent does not order them itself, the in-memory double its
acts."""

from __future__ import annotations

import asyncio
from typing import Any


class ActsInFlight:
    def __init__(self) -> None:
        self._by_screen: dict[int, set[asyncio.Future[Any]]] = {}

    def add(self, screen: int, act: asyncio.Future[Any]) -> None:
        """`act` (a task or a future) counts until it is done."""
        acts = self._by_screen.setdefault(screen, set())
        acts.add(act)
        act.add_done_callback(acts.discard)

    def pending(self, screen: int) -> list[asyncio.Future[Any]]:
        """The acts on `screen` not done now."""
        return [act for act in self._by_screen.get(screen, ()) if not act.done()]

    async def done(self, screen: int) -> None:
        """Until every act on `screen` asked so far is done (each answers its own errors)."""
        await all_done(self.pending(screen))


async def all_done(acts: list[asyncio.Future[Any]]) -> None:
    """Until each of `acts` is done; only their end is waited for (each answers its own
    errors)."""
    pending = [act for act in acts if not act.done()]
    if pending:
        await asyncio.wait(pending)


__all__ = ["ActsInFlight", "all_done"]
