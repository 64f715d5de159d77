"""The screen each step found: before a batch's step that drives its screen (input, a page
step), the screen is compared with the last frame recorded of it, and when it changed, a
`frame` entry of the picture it showed right then goes into the trace just before the
step's `acted` entry. The frame watcher alone records a change a coalescing window
(`FRAME_POLL_SECS`) after it was drawn, so a step sent sooner (`open_url`, then `type` 0.1 s
later) was shown on the trace page on the screen before the last one.

What it costs a step:

- a screen the server knows still with that frame (still_screens.py): nothing;
- else one request (`Desktop.look_before`) that goes out with the step's own, and that the
  agent answers from its tiles' hashes (tiles.py, `hash_if_clean`: one round trip to the X
  server, no pixel read, no encode) when nothing was drawn since it last looked;
- a screen that changed: the agent reads only the tiles drawn on since, before it does the
  step (so the picture is the one the step found); the PNG is encoded beside the step, and
  fetched and stored while the step's entries wait in the journal's queue
  (`stored_first`): the step is not held up, the batch's answer (which waits for its
  entries to be durable) by whatever of that outlasts its steps.

bench/click_path.py measures a click with and without it, side by side.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from holm.adapters.base import Desktop
from holm.errors import HolmError
from holm.events.store import TraceStore
from holm.wire.actions import (
    Action,
    Clipboard,
    Launch,
    OnNode,
    Record,
    Wait,
    WaitStill,
    reads_only,
    uses_screen,
)
from holm.wire.entries import Entry, FrameSeen
from holm.wire.runtime import FrameResult

from .guards import boundary
from .journal import Journal, now_ms
from .still_screens import StillScreens

log = logging.getLogger(__name__)

# Steps that drive a screen but whose screen before them nobody looks at: waits, a recording
# started or stopped, the clipboard, an app launched (its window comes after), widgets.
_NOT_LOOKED_BEFORE = (Wait, WaitStill, Record, Clipboard, Launch, OnNode)


def finds_a_screen(action: Action) -> bool:
    """Whether a step is an input or page step, whose trace shows the screen it found."""
    return (
        uses_screen(action)
        and not reads_only(action)
        and not isinstance(action, _NOT_LOOKED_BEFORE)
    )


class Looking:
    """A look asked before a step: the desktop's answer to come, and when it was asked."""

    def __init__(self, found: Awaitable[FrameResult], at_ms: int) -> None:
        self.found = found
        self.at_ms = at_ms


class StepFrames:
    def __init__(
        self, journal: Journal, store: TraceStore, still: StillScreens, *, enabled: bool
    ) -> None:
        self.journal = journal
        self.store = store
        self.still = still
        # `HOLM_FRAME_BEFORE_STEPS=off` turns it off (the bench compares the two).
        self.enabled = enabled

    def look(
        self, box_id: str, screen: int, desktop: Desktop, action: Action, last_step: bool = True
    ) -> Looking | None:
        """Ask, right before the step is sent, whether its screen changed since the last
        frame recorded (or queued) of it; None when nothing need be asked. The last step
        of a batch asks for the PNG in the answer (the answer waits for it stored); an
        earlier one fetches it beside the next step (`_store`), which it would wait for."""
        if not self.enabled or not finds_a_screen(action):
            return None
        last = _last_frame(self.journal, box_id, screen)
        if last is not None and self.still.unchanged(box_id, screen, desktop, last) is not None:
            return None
        found = desktop.look_before(screen, last, with_png=last_step)
        return None if found is None else Looking(found, now_ms())

    async def entries(
        self, box_id: str, screen: int, desktop: Desktop, looking: Looking
    ) -> tuple[list[Entry], Awaitable[bool] | None]:
        """The `frame` entry to go before the step's own (none when the screen had not
        changed), and what stores its picture first."""
        try:
            found = await boundary(looking.found, "a look at the screen before a step")
        except HolmError as exc:
            # The step is recorded as it was done, with no frame before it.
            log.info("no frame before a step on %s/%s: %s", box_id, screen, exc)
            return [], None
        # Recorded meanwhile (the watcher looked at the same picture): not twice.
        if found.unchanged or _last_frame(self.journal, box_id, screen) == found.hash:
            return [], None
        state = self.journal.state_ahead(box_id)
        held_by = state.held_by if state is not None else []
        holder = held_by[screen] if screen < len(held_by) else "agent"
        frame = FrameSeen(
            seq=0,
            at_ms=looking.at_ms,
            actor=holder,
            screen=screen,
            frame=found.hash,
            width=found.width,
            height=found.height,
        )
        stored = asyncio.ensure_future(self._store(box_id, screen, desktop, found))
        return [frame], stored

    async def _store(self, box_id: str, screen: int, desktop: Desktop, found: FrameResult) -> bool:
        """The picture put in the store (the look's answer has it, from an agent that
        sends it: else it is fetched); False (its entry is then left out) when it could
        not be fetched or stored."""
        digest = found.hash
        try:
            png = found.png
            if png is None:
                what = "a frame before a step"
                png = (await boundary(desktop.kept_frame(screen, digest), what)).png
            if png is None:
                return False
            await self.store.put_frame(box_id, digest, png)
        except Exception as exc:
            log.info("the frame before a step on %s/%s: %s", box_id, screen, exc)
            return False
        return True


def _last_frame(journal: Journal, box_id: str, screen: int) -> str | None:
    """The last frame of the screen recorded or queued to be."""
    state = journal.state_ahead(box_id)
    if state is None or screen >= len(state.frames):
        return None
    return state.frames[screen]


__all__ = ["Looking", "StepFrames", "finds_a_screen"]
