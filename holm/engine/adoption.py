"""Start-up: settle the boxes the log knows with the boxes the runtimes have.

- A box in both: its trace simply continues. If the server stopped while the box was
  starting, the box is taken back with `adopted`; if the runtime's state differs from the
  trace's (paused, running, stopped), the difference is recorded by the `system` actor.
- A box in the log that its runtime no longer has: `gone`; one that was starting when the
  server stopped: `box_failed`.
- The boxes of a runtime that cannot be asked: `box_unreachable` (the reaper brings them
  back when it answers again).
- A box a runtime has (created by this server) that the log lacks, because the store lost it
  or keeps nothing across restarts (the memory store): a new trace that starts with
  `adopted`, carrying the spec and placement the runtime kept, then `box_ready` with where
  its desktop answers (viewers, DevTools) when it has one.
- A box the log says was removed but the runtime still has: removed from the runtime.
- With replicas (engine/ownership.py), a box whose lease this server took from another
  that stopped renewing it: `adopted` when a runtime here has it; forgotten (and its lease
  let go) when none has.
- A spare of the warm pool (`pool.py`) this server left: removed, never adopted; a box whose
  trace starts with a spare's ID but that the runtime still lists as spare (the server
  stopped while taking it) is `box_failed` as any box stopped while starting.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

from holm.adapters.base import Runtime
from holm.errors import HolmError
from holm.projections.box_state import LOST_REASON, BoxState
from holm.wire.entries import (
    Adopted,
    BoxFailed,
    BoxPaused,
    BoxReady,
    BoxResumed,
    BoxStopped,
    Entry,
)
from holm.wire.runtime import RuntimeBox
from holm.wire.spec import DEFAULT_LIFETIME_SECS, Placement, Spec, spec_digest

from .guards import boundary
from .journal import entry, now_ms
from .reaper import UNREACHABLE_REASON

if TYPE_CHECKING:
    from .engine import Engine

log = logging.getLogger(__name__)

STOPPED_WHILE_STARTING = "the server stopped before the box was ready"


async def reconcile(engine: Engine) -> None:
    for name, runtime in engine.runtimes.items():
        try:
            listed = await boundary(runtime.list(), "listing boxes")
        except HolmError as exc:
            log.warning("the %s runtime could not list its boxes: %s", name, exc)
            await engine.mark_unreachable(name, f"{UNREACHABLE_REASON}: {exc.message}")
            continue
        # With replicas, a box whose lease this holmd took from another that stopped
        # renewing it is this holmd's now, whichever made it (engine/ownership.py).
        taken = engine.ownership.taken_over if engine.ownership is not None else set()
        mine = [
            box
            for box in listed
            if box.server_id in (None, engine.server_id) or (box.box_id in taken and not box.spare)
        ]
        for box in mine:
            if box.spare:
                await _remove_spare(runtime, box.box_id)
            else:
                await _settle_listed(engine, runtime, box, taken_over=box.box_id in taken)
        # A spare is no one's box, even under the ID of a box whose claim the stop broke.
        have = {box.box_id for box in listed if not box.spare}
        for state in engine.boxes():
            if state.runtime != name or state.id in have or state.state == "failed":
                continue
            if state.id in taken:
                # Another holmd's box on a runtime this one does not reach: its own
                # holmd (or one that reaches it) takes it when it starts.
                engine.journal.forget(state.id)
                assert engine.ownership is not None
                await engine.ownership.release(state.id)
                continue
            if state.state == "starting":
                failed = entry(BoxFailed, "system", why=STOPPED_WHILE_STARTING)
                await engine.journal.append(state.id, [failed])
            else:
                await engine.remove(state.id, LOST_REASON, lost=True)


async def _remove_spare(runtime: Runtime, box_id: str) -> None:
    """A spare of the warm pool left by a server that did not stop cleanly: its pool is
    gone with that server."""
    with contextlib.suppress(HolmError):
        await boundary(runtime.delete(box_id), "removing a spare box")


async def _settle_listed(
    engine: Engine, runtime: Runtime, box: RuntimeBox, *, taken_over: bool = False
) -> None:
    state = engine.journal.state(box.box_id)
    if state is not None and state.runtime != runtime.name:
        log.warning("box %s is on %s, its trace says %s", box.box_id, runtime.name, state.runtime)
        return
    if state is not None and state.removed:
        with contextlib.suppress(HolmError):
            await boundary(runtime.delete(box.box_id), "removing a removed box")
        return
    entries: list[Entry] = []
    if state is None or taken_over or state.state in ("starting", "unreachable", "failed"):
        adopted = (
            _adopted_unknown(runtime.name, box)
            if state is None
            else entry(Adopted, "system", box_id=box.box_id, runtime=runtime.name)
        )
        entries.extend([adopted, *_desktop_of(box, state)])
        was = "ready"
    else:
        was = state.state
    now = {"running": "ready", "paused": "paused", "stopped": "stopped"}[box.state]
    if was != now:
        entries.extend(runtime_difference(was, now))
    if entries:
        await engine.journal.append(box.box_id, entries)


def _adopted_unknown(runtime: str, box: RuntimeBox) -> Adopted:
    spec = box.spec or Spec()
    placement = box.placement or Placement(runtime=runtime)
    created = box.created_at_ms or now_ms()
    lifetime = placement.expires_after_secs or DEFAULT_LIFETIME_SECS
    return entry(
        Adopted,
        "system",
        box_id=box.box_id,
        runtime=runtime,
        spec=spec,
        placement=placement,
        spec_digest=spec_digest(spec),
        expires_at_ms=created + lifetime * 1000,
        owner=box.owner,
    )


def _desktop_of(box: RuntimeBox, state: BoxState | None) -> list[Entry]:
    """`box_ready` with where the adopted box's desktop answers, when its trace does not
    say so already (the store lost it, or it never was ready): without it the box would
    have no viewer URLs and no DevTools."""
    known = state is not None and (state.viewer_urls or state.devtools_url)
    if known or not (box.viewer_urls or box.devtools_url):
        return []
    ready = entry(BoxReady, "system", viewer_urls=box.viewer_urls, devtools_url=box.devtools_url)
    return [ready]


def runtime_difference(was: str, now: str) -> list[Entry]:
    """What the runtime did while the server was away, as the entries that say so."""
    if now == "paused":
        return [entry(BoxPaused, "system")]
    if now == "stopped":
        return [entry(BoxStopped, "system")]
    return [entry(BoxResumed, "system")]
