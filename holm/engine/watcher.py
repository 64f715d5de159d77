"""Frame watchers: one task per screen of each ready box waits until the screen changed,
then compares its hash with the last frame recorded and, when it differs, captures the
PNG, keeps it in the store and appends a `frame` entry whose actor is whoever has the
screen. They run beside the requests, never on a batch's path.

The desktop tells when a screen changed (`Desktop.await_change`: the agent counts the X
server's DAMAGE reports), so a still screen costs nothing: the watcher's call waits in
the agent until something is drawn (`IDLE_SECS` at most; then it looks once, which reads
no pixel of an unchanged screen). Changes are coalesced: the watcher looks `coalesce_secs`
after it was woken, so a burst of drawing is one look and an animation a look per window.
`nudge` (the server did something on the screen) wakes it as a change does. Beside each
runs the screen's browser watch (browser_watch.py).

A box that goes (deleted, stopped, paused, removed by the server) is looked at once more
first (`stop(..., last_look=True)`): a change drawn within the coalescing window before it
went would otherwise never be recorded, and its trace would end on an older screen.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from holm.adapters.base import Desktop
from holm.errors import HolmError
from holm.events.store import TraceStore
from holm.projections.box_state import BoxState
from holm.wire.entries import FrameSeen

from .browser_watch import watch_browser
from .guards import boundary
from .journal import Journal, entry
from .still_screens import StillScreens

log = logging.getLogger(__name__)

# After an error (a box going away, a desktop restarting) a watcher waits this much longer.
BACKOFF_SECS = 2.0
# The longest a watcher waits without looking, should a desktop fail to tell a change.
IDLE_SECS = 10.0
# The longest the last look at a box that goes may hold its going up (a wedged desktop).
LAST_LOOK_SECS = 5.0
WAITING = "waiting for a change"


class FrameWatchers:
    def __init__(
        self,
        journal: Journal,
        store: TraceStore,
        desktop_of: Callable[[str], Awaitable[Desktop]],
        coalesce_secs: float,
        idle_secs: float = IDLE_SECS,
    ) -> None:
        self.journal = journal
        self.store = store
        self.desktop_of = desktop_of
        self.coalesce_secs = coalesce_secs
        self.idle_secs = idle_secs
        self._tasks: dict[str, list[asyncio.Task[None]]] = {}
        # Per watched screen: set to look soon.
        self._nudged: dict[tuple[str, int], asyncio.Event] = {}
        # What is known still, forgotten at every nudge (engine.frame reads it).
        self.still = StillScreens()

    def watching(self, box_id: str) -> bool:
        """Whether the box's screens are watched (a ready box's are; a paused one's not)."""
        return bool(self._tasks.get(box_id))

    def nudge(self, box_id: str, screen: int | None = None) -> None:
        """The server did something that may change the screen (all screens when None):
        look soon, and forget that it was still."""
        self.still.moved(box_id, screen)
        if screen is not None:
            # Every action gives its screen: no look at the other boxes' screens.
            nudged = self._nudged.get((box_id, screen))
            if nudged is not None:
                nudged.set()
            return
        for (box, _), event in self._nudged.items():
            if box == box_id:
                event.set()

    def start(self, box_id: str) -> None:
        """Watch every screen of a box that just became ready (no-op when watched)."""
        state = self.journal.state(box_id)
        running = self._tasks.get(box_id, [])
        if state is None or any(not task.done() for task in running):
            return
        for screen in range(state.screens):
            self._nudged[(box_id, screen)] = asyncio.Event()
        self._tasks[box_id] = [
            asyncio.create_task(self._watch(box_id, screen), name=f"frames {box_id}/{screen}")
            for screen in range(state.screens)
        ] + [
            asyncio.create_task(
                watch_browser(self.journal, self.desktop_of, box_id, screen),
                name=f"browser {box_id}/{screen}",
            )
            for screen in range(state.screens)
        ]

    async def stop(self, box_id: str, *, last_look: bool = False) -> None:
        """Stop watching a box before it is paused, stopped or removed: a call in flight
        to a paused box would otherwise hang until it resumes. With `last_look`, then
        record each screen that changed since its last frame, so the trace ends on the
        screen the box ended on (bounded; a desktop that does not answer is let go)."""
        watched = self.watching(box_id)
        await self._stop(box_id)
        if last_look and watched:
            await self._last_look(box_id)

    async def _last_look(self, box_id: str) -> None:
        state = self.journal.state(box_id)
        if state is None or state.removed or state.state != "ready":
            return
        try:
            async with asyncio.timeout(LAST_LOOK_SECS):
                for screen in range(state.screens):
                    await self.record(self.journal.state(box_id) or state, screen, always=False)
        except (HolmError, TimeoutError) as exc:
            log.info("the last look at %s before it goes: %s", box_id, exc or "timed out")

    async def _stop(self, box_id: str) -> None:
        self.still.forget(box_id)
        tasks = self._tasks.pop(box_id, [])
        for key in [key for key in self._nudged if key[0] == box_id]:
            del self._nudged[key]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def close(self) -> None:
        for box_id in list(self._tasks):
            await self._stop(box_id)
        self.still.close()

    async def _watch(self, box_id: str, screen: int) -> None:
        key = (box_id, screen)
        nudged = self._nudged.get(key) or asyncio.Event()
        # The screen's count of changes when the last look began: a change after it is
        # one that look may have missed.
        count: int | None = None
        waiting: asyncio.Task[int] | None = None
        try:
            while True:
                state = self.journal.state(box_id)
                if state is None or state.removed or state.state != "ready":
                    return
                try:
                    desktop = await boundary(self.desktop_of(box_id), "reaching the desktop")
                    if count is None:
                        count = await boundary(desktop.await_change(screen, -1, 0), WAITING)
                    nudged.clear()
                    await self._look(state, screen)
                    if waiting is None:
                        within_ms = round(self.idle_secs * 1000)
                        waiting = asyncio.create_task(
                            boundary(desktop.await_change(screen, count, within_ms), WAITING)
                        )
                    await _first(waiting, nudged)
                    if waiting.done():
                        count, waiting = waiting.result(), None
                    await asyncio.sleep(self.coalesce_secs)
                except Exception as exc:
                    if isinstance(exc, HolmError):
                        log.debug("frames of %s/%s: %s", box_id, screen, exc)
                    else:
                        log.exception("frames of %s/%s", box_id, screen)
                    # Counted anew on the desktop as it is after the pause.
                    _drop(waiting)
                    count, waiting = None, None
                    await asyncio.sleep(BACKOFF_SECS)
        finally:
            _drop(waiting)

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
        # Of the state ahead: a takeover queued before this frame makes it the person's.
        current = self.journal.state_ahead(state.id) or state
        if not always and screen < len(current.frames) and current.frames[screen] == frame.hash:
            # Recorded meanwhile (before a step: step_frames.py): not twice in a row.
            return False
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


def _drop(waiting: asyncio.Task[int] | None) -> None:
    if waiting is not None:
        waiting.cancel()


async def _first(waiting: asyncio.Task[int], nudged: asyncio.Event) -> None:
    """Until the desktop tells of a change or the server nudges."""
    woken = asyncio.ensure_future(nudged.wait())
    try:
        await asyncio.wait({waiting, woken}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        woken.cancel()
