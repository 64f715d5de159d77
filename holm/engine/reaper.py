"""The reaper: removes boxes past their deadline (`expires_at_ms`) or idle too long
(`idle_timeout_secs` since the last entry an agent or a person made), and removes the boxes
their runtime says it no longer has. Each removal is a `gone` entry by the `system` actor with
its reason.

A runtime that cannot be asked (its `list` fails) loses nothing: its boxes become
`unreachable` (`box_unreachable`), and `ready` again (or paused or stopped, as the runtime
says) once it lists them; an unreachable box goes only when the runtime answers without it,
or when its deadline passes (it is not idle: nobody could use it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from holm.errors import HolmError, Unavailable
from holm.projections.box_state import LOST_REASON, BoxState

from .guards import boundary

if TYPE_CHECKING:
    from .engine import Engine

log = logging.getLogger(__name__)

UNREACHABLE_REASON = "the runtime cannot be reached"


def removal_due(state: BoxState, now_ms: int) -> str | None:
    """Why the box must go now, or None. A starting box waits for its launch to end, and
    a failed one stays until it is deleted."""
    if state.removed or state.state in ("starting", "failed"):
        return None
    if state.expires_at_ms is not None and now_ms >= state.expires_at_ms:
        return "expired: the box passed its deadline"
    idle = state.idle_timeout_secs
    if (
        idle is not None
        and state.state != "unreachable"
        and now_ms - state.last_used_ms >= idle * 1000
    ):
        return f"idle: no use for {idle} s"
    return None


async def reap(engine: Engine, now_ms: int) -> int:
    removed = 0
    for state in engine.boxes():
        reason = removal_due(state, now_ms)
        if reason is None:
            continue
        try:
            removed += await engine.remove(state.id, reason)
        except HolmError as exc:
            log.warning("could not remove %s (%s): %s; trying again later", state.id, reason, exc)
    removed += await forget_lost(engine)
    return removed


async def forget_lost(engine: Engine) -> int:
    """Remove the boxes whose runtime does not list them, and bring back the unreachable
    ones it lists. A runtime that cannot be asked loses nothing: its boxes are marked
    unreachable."""
    removed = 0
    for name, runtime in engine.runtimes.items():
        # Taken before asking the runtime, so that a box that comes up meanwhile (and so
        # may be missing from its answer) is not taken for lost.
        settled = [
            state.id
            for state in engine.boxes()
            if state.runtime == name and state.state not in ("starting", "failed")
        ]
        try:
            boxes = await boundary(runtime.list(), "listing boxes")
        except HolmError as exc:
            log.warning("the %s runtime could not list its boxes: %s", name, exc)
            await engine.mark_unreachable(name, f"{UNREACHABLE_REASON}: {exc.message}")
            continue
        listed = {box.box_id: box.state for box in boxes}
        for box_id in settled:
            if box_id not in listed:
                removed += await engine.remove(box_id, LOST_REASON, lost=True)
            else:
                await engine.reachable_again(box_id, listed[box_id])
    return removed


async def every(seconds: float, work: Callable[[], Awaitable[object]]) -> None:
    """Do `work` every `seconds`, for ever; a failure is logged and the loop goes on."""
    while True:
        await asyncio.sleep(seconds)
        try:
            await work()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("scheduled work failed")


def outages_told_once(
    what: str, work: Callable[[], Awaitable[None]], logger: logging.Logger
) -> Callable[[], Awaitable[None]]:
    """`work` (a round of `every`), its failures of the database (down, unreachable: an
    outage that is expected, not a bug) logged in one line when they begin and one when
    it answers again, not with a traceback each round: the next round tries again."""
    failing = False

    async def run() -> None:
        nonlocal failing
        try:
            await work()
        except Unavailable as exc:
            if not failing:
                logger.warning("%s: %s (tried again until it answers)", what, exc)
            failing = True
            return
        if failing:
            logger.info("%s: the database answers again", what)
        failing = False

    return run
