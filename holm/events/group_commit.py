"""The one writer of a durable store's appends (local.py, postgres.py): appends are queued,
and one task takes what is queued and commits it. With group commit it takes everything
queued at once, so concurrent appends share one fsync (local) or one transaction (postgres);
without, one append at a time (the benches' comparison).

The store's `commit` answers each append's future; whatever it raises fails every append of
the batch it was given still waiting, so that no append waits for a writer that is gone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from holm.errors import HolmError, Internal
from holm.wire.entries import Entry

log = logging.getLogger(__name__)


class Append:
    """One call's entries for one trace, and the future its caller waits on."""

    __slots__ = ("entries", "future", "trace")

    def __init__(self, trace: str, entries: Sequence[Entry], future: asyncio.Future[Any]):
        self.trace = trace
        self.entries = entries
        self.future = future


Commit = Callable[[list[Append]], Awaitable[None]]


class AppendQueue:
    """Queued appends and the task that commits them (see the module docstring)."""

    def __init__(self, commit: Commit, *, group_commit: bool, name: str) -> None:
        self.group_commit = group_commit
        self._commit = commit
        self._name = name
        self._pending: list[Append] = []
        self._wake = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False

    def put(self, trace: str, entries: Sequence[Entry]) -> asyncio.Future[list[Entry]]:
        """Queue an append; the future is answered once it is committed (or failed). A
        caller that stops waiting cancels the future, not the append: the writer writes
        what was queued (the step happened) and answers nobody."""
        future: asyncio.Future[list[Entry]] = asyncio.get_running_loop().create_future()
        self._pending.append(Append(trace, entries, future))
        self._wake.set()
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_forever(), name=self._name)
        return future

    async def close(self) -> None:
        """Commit what is queued, then end the writer."""
        self._closed = True
        self._wake.set()
        if self._writer is not None:
            await self._writer

    async def _write_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                if self.group_commit:
                    batch, self._pending = self._pending, []
                else:
                    batch = [self._pending.pop(0)]
                try:
                    await self._commit(batch)
                except Exception as exc:
                    if isinstance(exc, HolmError):
                        failure: HolmError = exc
                    else:
                        log.exception("%s failed", self._name)
                        failure = Internal(f"the trace store's writer failed: {exc}")
                    for append in batch:
                        if not append.future.done():
                            append.future.set_exception(failure)
            if self._closed:
                return


__all__ = ["Append", "AppendQueue", "Commit"]
