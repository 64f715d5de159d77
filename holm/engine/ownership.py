"""Which boxes this holmd runs, when several holmd share one postgres store (docs/scale.md).

A box is run (frame watcher, reaper, pool, jobs, every request that reaches its runtime)
by the holmd that holds its lease (holm/events/leases.py); the others forward requests for
it to that holmd (holm/http/forwarding.py). This module keeps the leases of this holmd:

- At start, after the log is folded: a box whose lease another live holmd holds is
  forgotten here (its owner runs it); the others are claimed, then reconciled with the
  runtimes as with one holmd.
- A new box is claimed before `box_created` is recorded, so no request for it can find it
  ownerless.
- Every third of a lease, the heartbeat renews this holmd's row and leases. A box whose
  lease another holmd took (this one was away longer than a lease) is forgotten. A box
  whose lease ran out, that a runtime of this holmd lists (a shared Docker Engine that
  every holmd reaches), is taken over: its trace is read, `adopted` recorded, its watcher
  started. One whose runtime this holmd does not reach is left to the holmd that does.
  One whose box is removed in the log (deleted just before its holmd died), or has no
  trace, has its lease row deleted: no runtime lists it, so nothing else would.
- The events feed follows the store: what the other holmd append is folded into this
  one's feed (its seqs are a function of the entries, so every holmd's feed agrees), and
  into the states of the boxes this holmd does not run (engine/elsewhere.py), which the
  reads served from the store itself answer with (`GET /v1/traces`, a removed box).

Without a postgres store there is one holmd, and none of this runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from holm.errors import HolmError
from holm.events.leases import Holder, Leases
from holm.events.shared_keys import SharedKeys
from holm.wire.entries import PAGE_MAX, SERVER_TRACE, Adopted
from holm.wire.runtime import RuntimeBox

from .adoption import runtime_difference
from .elsewhere import Elsewhere
from .guards import boundary
from .journal import entry
from .reaper import every, outages_told_once

if TYPE_CHECKING:
    from .engine import Engine

log = logging.getLogger(__name__)

# How often the events feed reads what the other holmd appended: well within the feed's
# delay (HOLM_EVENTS_DELAY_MS), so no event shows in one holmd's feed before another's.
FOLLOW_SECS = 0.1
# A box's holder, once looked up, is taken as known until its lease as read then runs out
# (no other holmd can take the box before), less this margin for the time the answer took
# to come: a forwarded request then needs no query. A holder that died meanwhile does not
# answer, and one that let the box go says so (421, http/forwarding.py): either drops it.
HOLDER_MARGIN_SECS = 0.25
# Every this many heartbeats, idempotency keys past their day go.
FORGET_KEYS_EVERY = 300


class Ownership:
    def __init__(self, engine: Engine, leases: Leases) -> None:
        self.engine = engine
        self.leases = leases
        # Idempotency keys every holmd honours (http/idempotency.py).
        self.keys = SharedKeys(leases.store, leases.me)
        self._beats = 0
        # Boxes whose lease this holmd took from a holmd that stopped renewing it: each
        # is adopted once its runtime is found to have it.
        self.taken_over: set[str] = set()
        # Boxes this holmd is taking over right now: their lease is its, their trace not
        # read yet; a request for one is answered 503, retryable (http/forwarding.py).
        self.adopting: set[str] = set()
        self._feed_pos = -1
        # The boxes other holmd run or ran, folded from what the follower reads.
        self.elsewhere = Elsewhere()
        # Box → (until when, by the loop's clock, its holder is known; the holder).
        self._holders: dict[str, tuple[float, Holder]] = {}
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def me(self) -> str:
        return self.leases.me

    async def begin(self) -> None:
        """Before the log is folded: where the feed follower starts (what is appended
        meanwhile is folded twice, which the feed ignores, rather than not at all)."""
        self._feed_pos = await self._feed_end()

    async def settle(self) -> None:
        """At start, after the log is folded and before the runtimes are reconciled:
        keep the boxes this holmd may run, forget the ones another runs."""
        await self.leases.heartbeat()
        for state in list(self.engine.journal.states()):
            if state.removed:
                continue
            claim = await self.leases.claim(state.id)
            if not claim.taken:
                self.elsewhere.keep(state)
                self.engine.journal.forget(state.id)
            elif claim.from_other is not None:
                self.taken_over.add(state.id)

    async def holder(self, box_id: str) -> Holder | None:
        """Who holds the lease of a box this holmd does not run, looked up once a lease at
        most (forwarding.py asks it on every request it sends on)."""
        clock = asyncio.get_running_loop().time
        cached = self._holders.get(box_id)
        if cached is not None and clock() < cached[0]:
            return cached[1]
        asked = clock()
        found = await self.leases.holder(box_id)
        if len(self._holders) > 10_000:
            self._holders.clear()
        # Only a live holder is kept: a box being taken over is looked up again.
        if found is not None and found.replica is not None and not found.expired:
            self._holders[box_id] = (asked + found.left_ms / 1000 - HOLDER_MARGIN_SECS, found)
        else:
            self._holders.pop(box_id, None)
        return found

    def drop_holder(self, box_id: str) -> None:
        """The holder did not answer, or said the box is not its: look it up again next
        time."""
        self._holders.pop(box_id, None)

    async def claim_new(self, box_id: str) -> None:
        """A box this holmd is about to record: its lease first."""
        await self.leases.claim(box_id)

    async def release(self, box_id: str) -> None:
        with contextlib.suppress(HolmError):
            await self.leases.release(box_id)

    def serve(self) -> None:
        beat = max(self.leases.lease_ms / 3000, 0.05)
        self._tasks = [
            asyncio.create_task(
                every(beat, outages_told_once("replicas", self.beat, log)), name="leases"
            ),
            asyncio.create_task(
                every(FOLLOW_SECS, outages_told_once("replicas", self.follow, log)),
                name="feed follower",
            ),
        ]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(HolmError):
            await self.leases.leave()

    # The heartbeat

    async def beat(self) -> None:
        held = await self.leases.heartbeat()
        self._beats += 1
        if self._beats % FORGET_KEYS_EVERY == 0:
            await self.keys.forget_old()
        for state in list(self.engine.journal.states()):
            if state.removed and state.id in held:
                # A removed box needs no owner: no request reaches its runtime again.
                await self.release(state.id)
            if state.removed or state.id in held:
                continue
            claim = await self.leases.claim(state.id)
            if not claim.taken:
                log.warning("box %s is run by %s now: this holmd lets it go", state.id, claim)
                await self.engine.watchers.stop(state.id)
                self.elsewhere.keep(state)
                self.engine.journal.forget(state.id)
        await self.take_over()

    async def take_over(self) -> int:
        """Take the boxes whose lease ran out that a runtime of this holmd has."""
        expired = [box for box in await self.leases.expired() if not self._known(box)]
        if not expired:
            return 0
        # No runtime lists a removed box: its lease would stay, looked at every beat.
        gone = set(await self.leases.forget_removed(expired))
        if gone:
            log.info("forgot the leases of %d removed boxes: %s", len(gone), sorted(gone))
            expired = [box for box in expired if box not in gone]
        taken = 0
        for name, runtime in self.engine.runtimes.items():
            try:
                listed = await boundary(runtime.list(), "listing boxes")
            except HolmError as exc:
                log.info("the %s runtime could not list its boxes: %s", name, exc)
                continue
            have = {box.box_id: box for box in listed if not box.spare}
            for box_id in expired:
                if box_id not in have:
                    continue
                self.adopting.add(box_id)
                try:
                    if (await self.leases.claim(box_id)).taken:
                        await self._adopt(name, have[box_id])
                        taken += 1
                finally:
                    self.adopting.discard(box_id)
        return taken

    def _known(self, box_id: str) -> bool:
        state = self.engine.journal.state(box_id)
        return state is not None and not state.removed

    async def _adopt(self, runtime: str, box: RuntimeBox) -> None:
        """Read the trace of a box another holmd ran and record `adopted`: the trace goes
        on from the last entry the store holds (seqs are the store's, so it stays whole)."""
        journal = self.engine.journal
        await journal.load(box.box_id)
        self.elsewhere.drop(box.box_id)
        state = journal.state(box.box_id)
        if state is None or state.removed:
            await self.release(box.box_id)
            return
        adopted = entry(Adopted, "system", box_id=box.box_id, runtime=runtime)
        # `adopted` reads as ready: a box paused or stopped in its runtime says so next.
        now = {"running": "ready", "paused": "paused", "stopped": "stopped"}[box.state]
        after = [] if now == "ready" else runtime_difference("ready", now)
        await journal.append(box.box_id, [adopted, *after])
        log.info("took over box %s from a holmd that stopped renewing its lease", box.box_id)
        if box.state == "running":
            self.engine.watchers.start(box.box_id)

    # The events feed

    async def follow(self) -> None:
        """Fold into this holmd's feed what every holmd appended since the last look, and
        into `elsewhere` what it appended to the boxes this holmd does not run."""
        store = self.leases.store
        journal = self.engine.journal
        while True:
            changes = await store.changes(self._feed_pos, PAGE_MAX)
            if not changes:
                return
            for change in changes:
                self.engine.feed.add(change.trace, [change.entry])
                if change.trace == SERVER_TRACE:
                    # A workspace's secret, or a runtime, set or removed through any holmd.
                    self.engine.secrets.fold(change.entry)
                    await self.engine.vendors.follow(change.entry)
                elif journal.state(change.trace) is None:
                    self.elsewhere.fold(change.trace, [change.entry])
            self._feed_pos = changes[-1].pos

    async def _feed_end(self) -> int:
        rows = await self.leases.store.query(
            "find the feed's end", "SELECT next_pos - 1 AS last FROM holm_feed"
        )
        return int(rows[0]["last"]) if rows else -1


__all__ = ["FOLLOW_SECS", "Ownership"]
