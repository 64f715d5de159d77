"""The warm pool (`HOLM_POOL`): spare boxes started before anyone asks, so that a create
whose spec and placement match one answers `ready` at once.

A spare belongs to no one and is in no trace: its boot is the pool's. Taking it gives it the
taker's box ID for good (spares are started under fresh box IDs), and it is never given
back: each spare serves one box, so nothing of one user reaches the next. The pool refills
in the background, never past its count, and is emptied when the server stops; a spare left
by a server that died is removed at the next start (`adoption.reconcile`).

A spare is booted with the pool's placement: the default runtime and nothing else. A
create matches it when its placement, its lifetime apart (which starts when the box is
taken), names nothing else; a create that finds no spare starts its box cold, never waits
for one.

A spare that does not start is tried again later, each time twice as late (from
`retry_secs`, at most `MAX_RETRY_SECS`), so a host where boxes cannot start is not kept
busy booting them. The pool says so where a user looks: its status per spec (`status`,
shown by `GET /v1/runtimes/{name}`) names the last failure and the next try, and the first
failure of a run and the spare that starts after it are recorded in the server's trace
(`pool_failing`, `pool_recovered`), which feed the events `pool.failing` and
`pool.recovered`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping

import msgspec

from holm.adapters.base import Runtime, SpareBoxes
from holm.errors import HolmError
from holm.wire.api import PoolView
from holm.wire.entries import Entry, PoolFailing, PoolRecovered
from holm.wire.runtime import Started
from holm.wire.spec import Placement, Spec, spec_digest

from .guards import boundary
from .journal import entry, now_ms

log = logging.getLogger(__name__)

# After a spare failed to start, the pool waits this long before it tries again, twice as
# long after each failure in a row, up to MAX_RETRY_SECS.
RETRY_SECS = 10.0
# A refill waits at most this long for the spares taken to be claimed before it boots one.
SERVE_FIRST_SECS = 5.0
MAX_RETRY_SECS = 600.0

Record = Callable[[list[Entry]], Awaitable[None]]


class _Failing(msgspec.Struct, kw_only=True):
    """A run of spares of one spec that did not start."""

    failures: int
    why: str
    at_ms: int
    retry_at_ms: int


class WarmPool:
    def __init__(
        self,
        counts: Mapping[str, int],
        runtime: Runtime,
        new_id: Callable[[], str],
        *,
        retry_secs: float = RETRY_SECS,
        max_retry_secs: float = MAX_RETRY_SECS,
        record: Record | None = None,
    ) -> None:
        self.counts = {digest: count for digest, count in counts.items() if count > 0}
        self.runtime = runtime
        self.placement = Placement(runtime=runtime.name)
        self.new_id = new_id
        self.retry_secs = retry_secs
        self.max_retry_secs = max_retry_secs
        # Where the pool's failing and recovering are recorded (the server's trace).
        self.record = record
        # By spec digest: the failures in a row, while the pool waits to try again.
        self._failing: dict[str, _Failing] = {}
        # Set whenever a refill ends or starts to wait after a failure (`filled`).
        self._settled = asyncio.Event()
        self._specs: dict[str, Spec] = {}
        # The spares up and not taken, by spec digest; and those booting.
        self._ready: dict[str, list[str]] = {digest: [] for digest in self.counts}
        self._booting: dict[str, int] = dict.fromkeys(self.counts, 0)
        self._fillers: dict[str, asyncio.Task[None]] = {}
        # Spares taken and not claimed yet: a refill waits for them, so that a burst of
        # creates is served before a boot takes the CPU.
        self._taken: set[str] = set()
        self._served = asyncio.Event()
        self._served.set()
        self._closed = False

    def status(self) -> list[PoolView]:
        """What the pool holds and does, per spec digest it keeps spares of."""
        views = []
        for digest, count in sorted(self.counts.items()):
            failing = self._failing.get(digest)
            views.append(
                PoolView(
                    spec_digest=digest,
                    count=count,
                    ready=len(self._ready[digest]),
                    booting=self._booting[digest],
                    known=digest in self._specs,
                    failures=failing.failures if failing else 0,
                    last_failure=failing.why if failing else None,
                    last_failure_at_ms=failing.at_ms if failing else None,
                    next_retry_at_ms=failing.retry_at_ms if failing else None,
                )
            )
        return views

    def spares(self, spec: Spec) -> list[str]:
        """The spares of `spec` up now, oldest first."""
        return list(self._ready.get(spec_digest(spec), []))

    def learn(self, spec: Spec) -> None:
        """A spec the pool keeps spares of by digest becomes known (the default spec, or
        the first box made with it), and its spares start coming up."""
        digest = spec_digest(spec)
        if digest in self.counts and digest not in self._specs:
            self._specs[digest] = spec
            self.refill(digest)

    def take(self, spec: Spec, placement: Placement) -> str | None:
        """A spare for a box of `spec` at `placement` (the placement with its runtime
        named), or None; a spare taken is the caller's, and a new one comes up."""
        digest = spec_digest(spec)
        ready = self._ready.get(digest)
        if not ready or not self.fits(placement):
            return None
        box_id = ready.pop(0)
        self._taken.add(box_id)
        self._served.clear()
        self.refill(digest)
        return box_id

    def fits(self, placement: Placement) -> bool:
        lifetime_apart = msgspec.structs.replace(
            placement, expires_after_secs=None, idle_timeout_secs=None
        )
        return lifetime_apart == self.placement

    def refill(self, digest: str) -> None:
        filler = self._fillers.get(digest)
        if self._closed or digest not in self._specs or (filler and not filler.done()):
            return
        self._fillers[digest] = asyncio.create_task(self._fill(digest), name=f"pool {digest}")

    async def _fill(self, digest: str) -> None:
        try:
            await self._filling(digest)
        finally:
            self._settled.set()

    async def _filling(self, digest: str) -> None:
        # One spare at a time: on a small machine spares booting side by side would slow
        # the boxes people use.
        while len(self._ready[digest]) + self._booting[digest] < self.counts[digest]:
            with contextlib.suppress(TimeoutError):
                # Bounded: a taken spare whose create went away must not stop the refill.
                await asyncio.wait_for(self._served.wait(), SERVE_FIRST_SECS)
            box_id = self.new_id()
            self._booting[digest] += 1
            try:
                await self._boot(box_id, self._specs[digest])
            except HolmError as exc:
                failed: str | None = exc.message
            else:
                failed = None
            finally:
                self._booting[digest] -= 1
            if failed is not None:
                await asyncio.sleep(await self._failed(digest, failed))
                continue
            self._ready[digest].append(box_id)
            if self._failing.pop(digest, None) is not None:
                log.info("spares of %s start again", digest)
                await self._recorded(PoolRecovered, spec_digest=digest)

    async def _failed(self, digest: str, why: str) -> float:
        """Note a spare that did not start; how long to wait before the next."""
        before = self._failing.get(digest)
        failures = before.failures + 1 if before else 1
        wait = min(self.retry_secs * 2.0 ** (failures - 1), self.max_retry_secs)
        now = now_ms()
        retry_at = now + round(wait * 1000)
        self._failing[digest] = _Failing(
            failures=failures, why=why, at_ms=now, retry_at_ms=retry_at
        )
        log.warning(
            "a spare box of %s did not start (%d in a row; next try in %.0f s): %s",
            digest,
            failures,
            wait,
            why,
        )
        if before is None:
            await self._recorded(PoolFailing, spec_digest=digest, why=why, retry_at_ms=retry_at)
        self._settled.set()
        return wait

    async def _recorded(self, kind: type[PoolFailing | PoolRecovered], **fields: object) -> None:
        if self.record is None:
            return
        try:
            await self.record([entry(kind, "system", runtime=self.runtime.name, **fields)])
        except HolmError as exc:
            # The store is down: the status still says it, and the pool goes on.
            log.warning("the pool's %s was not recorded: %s", kind.__name__, exc)

    async def _boot(self, box_id: str, spec: Spec) -> None:
        assert isinstance(self.runtime, SpareBoxes)
        await boundary(self.runtime.create_spare(box_id, spec, self.placement), "a spare box")

    async def filled(self) -> None:
        """Wait for the refills under way to end, or to fail and wait before trying again
        (for tests and benches: a pool that cannot fill never ends its refill)."""
        while True:
            busy = [
                task
                for digest, task in self._fillers.items()
                if not task.done() and digest not in self._failing
            ]
            if not busy:
                return
            self._settled.clear()
            settled = asyncio.ensure_future(self._settled.wait())
            try:
                await asyncio.wait([*busy, settled], return_when=asyncio.FIRST_COMPLETED)
            finally:
                settled.cancel()

    async def claim(
        self, box_id: str, placement: Placement | None, *, owner: str | None = None
    ) -> Started | None:
        """Make the spare taken as `box_id` that box, with its `placement` and `owner`;
        None (and the spare removed) when it cannot serve, and the box is then started
        cold."""
        assert isinstance(self.runtime, SpareBoxes)
        claiming = self.runtime.claim(box_id, placement or self.placement, owner=owner)
        try:
            return await boundary(claiming, "taking a spare box")
        except HolmError as exc:
            log.warning("the spare box %s could not serve: %s", box_id, exc)
            await self.discard(box_id)
            return None
        finally:
            self._serve_done(box_id)

    async def discard(self, box_id: str) -> None:
        """Remove a spare that was taken and could not serve."""
        self._serve_done(box_id)
        with contextlib.suppress(HolmError):
            await boundary(self.runtime.delete(box_id), "removing a spare box")

    def _serve_done(self, box_id: str) -> None:
        self._taken.discard(box_id)
        if not self._taken:
            self._served.set()

    async def close(self) -> None:
        """Stop refilling (a spare booting is removed by its runtime's create as it is
        cancelled) and remove the spares."""
        self._closed = True
        for task in self._fillers.values():
            task.cancel()
        for task in self._fillers.values():
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for ready in self._ready.values():
            while ready:
                await self.discard(ready.pop())


def pool_of(
    counts: Mapping[str, int],
    runtime: Runtime | None,
    new_id: Callable[[], str],
    record: Record | None = None,
) -> WarmPool | None:
    """The pool `counts` asks for on `runtime` (the default one), or None: no pool is
    asked for, or the runtime cannot keep spares (logged)."""
    if not any(count > 0 for count in counts.values()):
        return None
    if runtime is None or not isinstance(runtime, SpareBoxes):
        name = "no runtime" if runtime is None else f"the {runtime.name} runtime"
        log.warning("HOLM_POOL is set but %s cannot keep spare boxes: no pool", name)
        return None
    return WarmPool(counts, runtime, new_id, record=record)
