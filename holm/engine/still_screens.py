"""Screens known to be still, so that an unchanged frame (`have`) is answered without a round
trip to the box.

A whole-screen frame from the desktop says how many changes its screen had counted before
the capture began (`FrameResult.changes`, the count `Desktop.await_change` waits on): every
change counted is in that picture. The screen is kept here as still with that frame's hash,
and a waiter asks the desktop to tell as soon as the count moves past it; then, or when the
server itself does anything that may draw on the box (`moved`, from the frame watchers'
nudge, which every action gives before it is answered), or when the desktop object changes
(a new agent counts from zero), or after `KEEP_MS` with no word (a desktop that stopped
telling), the screen is no longer known still and the next frame goes to the desktop.

So an answer from here is as fresh as the desktop's word of a change: a program in the box
that draws on its own is told of within the time its count takes to reach the server (about
a millisecond), as a frame asked of the desktop at that moment would not have shown a
drawing the program had not made yet either; and nothing the server did is ever missed,
since its own actions forget what was known before they answer.
"""

from __future__ import annotations

import asyncio
import logging
from typing import NamedTuple

from holm.adapters.base import Desktop
from holm.wire.runtime import FrameResult

log = logging.getLogger(__name__)

# How long a still screen is believed without any word from the desktop.
KEEP_MS = 5000

_Key = tuple[str, int]


class _Still(NamedTuple):
    desktop: Desktop
    hash: str
    width: int
    height: int
    changes: int


class StillScreens:
    def __init__(self) -> None:
        self._still: dict[_Key, _Still] = {}
        self._waiters: dict[_Key, asyncio.Task[None]] = {}
        # Bumped by `moved`: a frame asked before an action is not taken as still after it.
        self._generation: dict[str, int] = {}

    def generation(self, box_id: str) -> int:
        """To give `saw` with the frame asked now."""
        return self._generation.get(box_id, 0)

    def unchanged(
        self, box_id: str, screen: int, desktop: Desktop, have: str
    ) -> FrameResult | None:
        """The answer for a whole-screen frame of `have` when the screen is known still
        with that picture; None when the desktop must be asked."""
        still = self._still.get((box_id, screen))
        if still is None or still.desktop is not desktop or still.hash != have:
            return None
        return FrameResult(hash=have, unchanged=True, width=still.width, height=still.height)

    def saw(
        self, box_id: str, screen: int, desktop: Desktop, frame: FrameResult, generation: int
    ) -> None:
        """A whole-screen frame the desktop answered, asked at `generation`."""
        key = (box_id, screen)
        if frame.changes is None or generation != self.generation(box_id):
            self._drop(key)
            return
        still = _Still(desktop, frame.hash, frame.width, frame.height, frame.changes)
        if self._still.get(key) == still:
            return
        self._drop(key)
        self._still[key] = still
        self._waiters[key] = asyncio.create_task(
            self._until_moved(key, still), name=f"still {box_id}/{screen}"
        )

    def moved(self, box_id: str, screen: int | None = None) -> None:
        """The server did something that may draw on the box (on `screen`, or anywhere)."""
        self._generation[box_id] = self.generation(box_id) + 1
        if screen is not None:
            # Every action gives its screen: no look at the other boxes' screens.
            self._drop((box_id, screen))
            return
        for key in [key for key in self._still if key[0] == box_id]:
            self._drop(key)

    def forget(self, box_id: str) -> None:
        self.moved(box_id)
        self._generation.pop(box_id, None)

    def close(self) -> None:
        for key in list(self._still):
            self._drop(key)

    async def _until_moved(self, key: _Key, still: _Still) -> None:
        try:
            await still.desktop.await_change(key[1], still.changes, KEEP_MS)
        except Exception as exc:  # the box went away: nothing is known of it
            log.debug("still screen %s: %s", key, exc)
        # Moved past, silent for KEEP_MS, or gone: not known still any more.
        if self._still.get(key) is still:
            del self._still[key]
            self._waiters.pop(key, None)

    def _drop(self, key: _Key) -> None:
        self._still.pop(key, None)
        waiter = self._waiters.pop(key, None)
        if waiter is not None:
            waiter.cancel()


__all__ = ["KEEP_MS", "StillScreens"]
