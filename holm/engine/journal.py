"""The engine's one record of boxes: it appends entries to the store and folds what the
store wrote into the box projection and the events feed, in seq order.

Appends to one trace go through one writer that takes everything queued while the store
was busy in a single `append` call: the entries keep the order in which they were queued,
share one fsync, and are folded as soon as they are durable, so an operation that awaited
its append sees its own entries in the box state.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Collection, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from holm.errors import HolmError, Unavailable
from holm.events.store import TraceStore
from holm.projections.box_state import BoxState, fold_known, state_bearing
from holm.projections.events_feed import EventsFeed
from holm.wire.entries import (
    PAGE_MAX,
    SERVER_TRACE,
    Actor,
    Entry,
    FrameSeen,
    RuntimeAdded,
    RuntimeRemoved,
    SecretRemoved,
    SecretSet,
)

log = logging.getLogger(__name__)

E = TypeVar("E", bound=Entry)
T = TypeVar("T")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def entry(cls: type[E], actor: Actor, **fields: Any) -> E:
    """A new entry of kind `cls`, stamped now; the store gives its seq."""
    return cls(seq=0, at_ms=now_ms(), actor=actor, **fields)


async def stored(call: Awaitable[T]) -> T:
    """Await a store call; a failure that is not a holm error (the disk, the OS) means the
    store is not available."""
    try:
        return await call
    except HolmError:
        raise
    except Exception as exc:
        log.exception("the trace store failed")
        raise Unavailable(f"the trace store failed: {exc}") from exc


class Journal:
    def __init__(self, store: TraceStore, feed: EventsFeed) -> None:
        self.store = store
        self.feed = feed
        self._states: dict[str, BoxState] = {}
        self._writers: dict[str, _TraceWriter] = {}

    def state(self, box_id: str) -> BoxState | None:
        return self._states.get(box_id)

    def state_ahead(self, box_id: str) -> BoxState | None:
        """The box's state once everything submitted for it so far is folded in: what an
        entry submitted now comes after. `state` lags behind by the entries not yet
        durable, so an entry whose fields depend on the state (a frame's actor is whoever
        holds the screen) is built from this one, or it could contradict an entry queued
        before it (a takeover)."""
        state = self._states.get(box_id)
        writer = self._writers.get(box_id)
        pending = writer.pending() if writer is not None else []
        if pending:
            state, _ = fold_known(pending, state)
        return state

    def states(self) -> Iterator[BoxState]:
        return iter(list(self._states.values()))

    def forget(self, box_id: str) -> None:
        """Drop a box whose trace the store pruned."""
        self._states.pop(box_id, None)

    @staticmethod
    def keep(trace: str, old: Iterable[Entry]) -> Collection[int]:
        """What a prune by age must keep of a trace's old entries for `rebuild` to give
        the state it has now (the store's `KeepEntries`): a box's state-bearing entries,
        and of the server's trace the runtimes added (`runtime_*`) and the workspaces'
        secrets (`secret_*`), which the engine folds at start."""
        if trace == SERVER_TRACE:
            kept = RuntimeAdded | RuntimeRemoved | SecretSet | SecretRemoved
            return [e.seq for e in old if isinstance(e, kept)]
        return state_bearing(old)

    async def append(self, trace: str, entries: Sequence[Entry]) -> list[Entry]:
        """Make `entries` durable, fold them in, and return them with their seq."""
        return await self.submit(trace, entries)

    def submit(
        self, trace: str, entries: Sequence[Entry], *, stored_first: Awaitable[bool] | None = None
    ) -> asyncio.Future[list[Entry]]:
        """Queue `entries` behind what was queued before for `trace` and return at once;
        the future resolves when they are durable and folded in. With `stored_first` (a
        frame's PNG being put in the store), they and everything queued after them are
        written once it is done; when it fails or answers False, their `frame` entries are
        left out (a frame entry never names a picture the store lacks)."""
        writer = self._writers.get(trace)
        if writer is None:
            writer = self._writers[trace] = _TraceWriter(self, trace)
        return writer.submit(entries, stored_first)

    def _fold(self, trace: str, written: Sequence[Entry]) -> None:
        self.feed.add(trace, written)
        if trace == SERVER_TRACE:
            return
        state, refused = fold_known(written, self._states.get(trace))
        if state is not None:
            self._states[trace] = state
        for exc in refused:
            log.error("trace %s: %s", trace, exc)

    async def rebuild(self) -> None:
        """Fold every trace of the store from scratch (at start-up)."""
        for info in await stored(self.store.traces()):
            await self.load(info.trace)

    async def load(self, trace: str) -> None:
        """Fold one trace from scratch: at start-up, and when this holmd takes over a box
        another holmd ran (engine/ownership.py)."""
        self._states.pop(trace, None)
        after: int | None = None
        while True:
            page = await stored(self.store.read(trace, after, PAGE_MAX))
            if not page:
                break
            self._fold(trace, page)
            after = page[-1].seq

    async def close(self) -> None:
        for writer in list(self._writers.values()):
            await writer.drain()


class _TraceWriter:
    def __init__(self, journal: Journal, trace: str) -> None:
        self.journal = journal
        self.trace = trace
        self.queue: list[_Queued] = []
        # Taken from the queue and being written: not folded yet either.
        self.writing: list[Entry] = []
        self.flushing: asyncio.Task[None] | None = None

    def pending(self) -> list[Entry]:
        """The entries submitted and not yet folded in, in order."""
        return self.writing + [item for entries, _, _ in self.queue for item in entries]

    def submit(
        self, entries: Sequence[Entry], stored_first: Awaitable[bool] | None = None
    ) -> asyncio.Future[list[Entry]]:
        future: asyncio.Future[list[Entry]] = asyncio.get_running_loop().create_future()
        self.queue.append((list(entries), future, stored_first))
        if self.flushing is None:
            self.flushing = asyncio.create_task(self._flush())
        return future

    async def drain(self) -> None:
        if self.flushing is not None:
            await asyncio.shield(self.flushing)

    async def _flush(self) -> None:
        try:
            while self.queue:
                batch, self.queue = self.queue, []
                self.writing = [item for entries, _, _ in batch for item in entries]
                try:
                    batch = [await _gated(queued) for queued in batch]
                except BaseException:
                    # Stopped while a picture was being stored: those entries are failed
                    # with the rest of the queue, below.
                    self.queue = batch + self.queue
                    raise
                flat = self.writing = [item for entries, _, _ in batch for item in entries]
                try:
                    written = await stored(self.journal.store.append(self.trace, flat))
                except HolmError as exc:
                    self.writing = []
                    for _, future, _ in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                self.writing = []
                try:
                    self.journal._fold(self.trace, written)
                except Exception:
                    # The entries are durable whatever a projection makes of them; the
                    # appends are answered, and the next start folds them again.
                    log.exception("folding entries of %s", self.trace)
                start = 0
                for entries, future, _ in batch:
                    if not future.done():
                        future.set_result(written[start : start + len(entries)])
                    start += len(entries)
        finally:
            self.flushing = None
            self.writing = []
            for _, future, _ in self.queue:
                if not future.done():
                    future.set_exception(Unavailable("the server is stopping"))
            self.queue = []


# Entries queued, the future their submitter awaits, and what must be stored before them.
_Queued = tuple[list[Entry], "asyncio.Future[list[Entry]]", Awaitable[bool] | None]


async def _gated(queued: _Queued) -> _Queued:
    """`queued` once what must be stored first is: without its `frame` entries when that
    failed."""
    entries, future, stored_first = queued
    if stored_first is None:
        return queued
    try:
        kept = await stored_first
    except Exception as exc:
        log.warning("a frame's picture was not stored, its entry is left out: %s", exc)
        kept = False
    if not kept:
        entries = [item for item in entries if not isinstance(item, FrameSeen)]
    return entries, future, None
