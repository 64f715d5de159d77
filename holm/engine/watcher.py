"""Frame watchers: one task per screen of each ready box polls the screen's pixel hash and,
when it changed, captures the PNG, keeps it in the store and appends a `frame` entry whose
actor is whoever has the screen. They run beside the requests, never on a batch's path.

A poll is not free (the agent reads the whole screen to hash it), so a watcher polls a few
times a second (`poll_secs`) only while the screen is busy: for `HOT_SECS` after the server
did something on it (`nudge`) or after it last changed; otherwise once every
`IDLE_POLL_SECS`, which still catches what a person or an animation changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from holm.adapters.base import Desktop
from holm.errors import HolmError
from holm.events.store import TraceStore
from holm.projections.box_state import BoxState
from holm.wire.entries import FrameSeen

from .guards import boundary
from .journal import Journal, entry

log = logging.getLogger(__name__)

# After an error (a box going away, a desktop restarting) a watcher waits this much longer.
BACKOFF_SECS = 2.0
HOT_SECS = 3.0
IDLE_POLL_SECS = 1.0


class FrameWatchers:
    def __init__(
        self,
        journal: Journal,
        store: TraceStore,
        desktop_of: Callable[[str], Awaitable[Desktop]],
        poll_secs: float,
    ) -> None:
        self.journal = journal
        self.store = store
        self.desktop_of = desktop_of
        self.poll_secs = poll_secs
        self.idle_poll_secs = max(poll_secs, IDLE_POLL_SECS)
        self._tasks: dict[str, list[asyncio.Task[None]]] = {}
        # Per watched screen: set to look now; and until when to poll fast.
        self._nudged: dict[tuple[str, int], asyncio.Event] = {}
        self._hot_until: dict[tuple[str, int], float] = {}

    def watching(self, box_id: str) -> bool:
        """Whether the box's screens are watched (a ready box's are; a paused one's not)."""
        return bool(self._tasks.get(box_id))

    def nudge(self, box_id: str, screen: int | None = None) -> None:
        """The server did something that may change the screen (all screens when None):
        look soon and keep looking fast for a while. Costs nothing when not watched."""
        until = time.monotonic() + HOT_SECS
        for (box, number), event in self._nudged.items():
            if box == box_id and screen in (None, number):
                self._hot_until[(box, number)] = until
                event.set()

    def start(self, box_id: str) -> None:
        """Watch every screen of a box that just became ready (no-op when watched)."""
        state = self.journal.state(box_id)
        running = self._tasks.get(box_id, [])
        if state is None or any(not task.done() for task in running):
            return
        for screen in range(state.screens):
            self._nudged[(box_id, screen)] = asyncio.Event()
            self._hot_until[(box_id, screen)] = time.monotonic() + HOT_SECS
        self._tasks[box_id] = [
            asyncio.create_task(self._watch(box_id, screen), name=f"frames {box_id}/{screen}")
            for screen in range(state.screens)
        ]

    async def stop(self, box_id: str) -> None:
        """Stop watching a box before it is paused, stopped or removed: a call in flight
        to a paused box would otherwise hang until it resumes."""
        tasks = self._tasks.pop(box_id, [])
        for key in [key for key in self._nudged if key[0] == box_id]:
            del self._nudged[key]
            self._hot_until.pop(key, None)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def close(self) -> None:
        for box_id in list(self._tasks):
            await self.stop(box_id)

    async def _watch(self, box_id: str, screen: int) -> None:
        while True:
            state = self.journal.state(box_id)
            if state is None or state.removed or state.state != "ready":
                return
            key = (box_id, screen)
            try:
                if await self._look(state, screen):
                    self._hot_until[key] = time.monotonic() + HOT_SECS
                await self._pause(key, 0.0)
            except HolmError as exc:
                log.debug("frames of %s/%s: %s", box_id, screen, exc)
                await self._pause(key, BACKOFF_SECS)
            except Exception:
                log.exception("frames of %s/%s", box_id, screen)
                await self._pause(key, BACKOFF_SECS)

    async def _pause(self, key: tuple[str, int], extra: float) -> None:
        """Wait for the next poll: soon while the screen is busy, else until the idle
        interval ends or the server nudges."""
        if time.monotonic() < self._hot_until.get(key, 0.0):
            await asyncio.sleep(self.poll_secs + extra)
            return
        event = self._nudged.get(key)
        if event is None:
            await asyncio.sleep(self.idle_poll_secs + extra)
            return
        event.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), self.idle_poll_secs + extra)

    async def _look(self, state: BoxState, screen: int) -> bool:
        """Record the screen if it changed; say whether it did."""
        return await self.record(state, screen, always=False)

    async def record(self, state: BoxState, screen: int, *, always: bool) -> bool:
        """Append a `frame` entry of the screen as it is now when it changed since the last
        one recorded (or `always`), its PNG kept in the store; say whether it appended.
        The actor is whoever has the screen when the entry is appended."""
        last = state.frames[screen] if screen < len(state.frames) else None
        desktop = await boundary(self.desktop_of(state.id), "reaching the desktop")
        if not always:
            now, _, _ = await boundary(desktop.frame_hash(screen), "a frame hash")
            if now == last:
                return False
        frame = await boundary(
            desktop.frame(screen, have=None if always else last), "a frame capture"
        )
        if frame.png is None:
            return False
        await self.store.put_frame(state.id, frame.hash, frame.png)
        current = self.journal.state(state.id) or state
        holder = current.held_by[screen] if screen < len(current.held_by) else "agent"
        await self.journal.append(
            state.id,
            [
                entry(
                    FrameSeen,
                    holder,
                    screen=screen,
                    frame=frame.hash,
                    width=frame.width,
                    height=frame.height,
                )
            ],
        )
        return True
