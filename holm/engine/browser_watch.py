"""The browser watch: one task per screen of each ready box waits (in the agent, a long
wait that costs nothing meanwhile) until the screen's Chromium was started again, since it
ends when its last window closes, and appends `browser_restarted` (actor `system`): a trace
says that the pages of before are gone. Started and stopped with the frame watchers.

The first look counts the starts so far: a start from before it (a server restarted since)
is not recorded twice. A screen with no Chromium (`Unsupported`) is not watched further,
nor one whose browser could not come back (recorded once, with its `failure`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from holm.adapters.base import Desktop
from holm.errors import BadRequest, HolmError, Unsupported
from holm.wire.entries import BrowserRestarted

from .guards import boundary
from .journal import Journal, entry

log = logging.getLogger(__name__)

BACKOFF_SECS = 2.0
WAIT_MS = 60_000
WAITING = "waiting for the browser"


async def watch_browser(
    journal: Journal, desktop_of: Callable[[str], Awaitable[Desktop]], box_id: str, screen: int
) -> None:
    """Record each start again of the screen's Chromium, until the box is no longer ready."""
    seen: int | None = None
    while True:
        state = journal.state(box_id)
        if state is None or state.removed or state.state != "ready":
            return
        try:
            desktop = await boundary(desktop_of(box_id), "reaching the desktop")
            if seen is None:
                seen = (await boundary(desktop.await_browser(screen, -1, 0), WAITING)).starts
            told = await boundary(desktop.await_browser(screen, seen, WAIT_MS), WAITING)
        except (Unsupported, BadRequest):
            # No Chromium on this screen, or an agent older than the browser's keeper.
            return
        except HolmError as exc:
            log.debug("the browser of %s/%s: %s", box_id, screen, exc)
            seen = None
            await asyncio.sleep(BACKOFF_SECS)
            continue
        if told.starts <= seen and told.failure is None:
            continue
        seen = told.starts
        restarted = entry(
            BrowserRestarted,
            "system",
            screen=screen,
            why=told.why or "chromium ended",
            failure=told.failure,
        )
        await journal.append(box_id, [restarted])
        if told.failure is not None:
            return
