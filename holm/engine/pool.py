"""The warm pool (`HOLM_POOL`): spare boxes started before anyone asks, so that a create
whose spec and placement match one answers `ready` at once.

A spare belongs to no one and is in no trace: its boot is the pool's. Taking it gives it the
taker's box ID for good (spares are started under fresh box IDs), and it is never given
back: each spare serves one box, so nothing of one user reaches the next. The pool refills
in the background, never past its count, and is emptied when the server stops; a spare left
by a server that died is removed at the next start (`adoption.reconcile`).

A spare is booted with the pool's placement: the default runtime and nothing else. A
create matches it when its placement, its lifetime apart (which starts when the box is
taken), names nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping

import msgspec

from holm.adapters.base import Runtime, SpareBoxes
from holm.errors import HolmError
from holm.wire.runtime import Started
from holm.wire.spec import Placement, Spec, spec_digest

from .guards import boundary

log = logging.getLogger(__name__)

# After a spare failed to start, the pool waits this long before it tries again.
RETRY_SECS = 10.0
# A refill waits at most this long for the spares taken to be claimed before it boots one.
SERVE_FIRST_SECS = 5.0


class WarmPool:
    def __init__(
        self,
        counts: Mapping[str, int],
        runtime: Runtime,
        new_id: Callable[[], str],
        *,
        retry_secs: float = RETRY_SECS,
    ) -> None:
        self.counts = {digest: count for digest, count in counts.items() if count > 0}
        self.runtime = runtime
        self.placement = Placement(runtime=runtime.name)
        self.new_id = new_id
        self.retry_secs = retry_secs
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
                log.warning("a spare box of %s did not start: %s", digest, exc)
                await asyncio.sleep(self.retry_secs)
                continue
            finally:
                self._booting[digest] -= 1
            self._ready[digest].append(box_id)

    async def _boot(self, box_id: str, spec: Spec) -> None:
        assert isinstance(self.runtime, SpareBoxes)
        await boundary(self.runtime.create_spare(box_id, spec, self.placement), "a spare box")

    async def filled(self) -> None:
        """Wait for the refills under way to end (for tests and benches)."""
        await asyncio.gather(*self._fillers.values(), return_exceptions=True)

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
    counts: Mapping[str, int], runtime: Runtime | None, new_id: Callable[[], str]
) -> WarmPool | None:
    """The pool `counts` asks for on `runtime` (the default one), or None: no pool is
    asked for, or the runtime cannot keep spares (logged)."""
    if not any(count > 0 for count in counts.values()):
        return None
    if runtime is None or not isinstance(runtime, SpareBoxes):
        name = "no runtime" if runtime is None else f"the {runtime.name} runtime"
        log.warning("HOLM_POOL is set but %s cannot keep spare boxes: no pool", name)
        return None
    return WarmPool(counts, runtime, new_id)
