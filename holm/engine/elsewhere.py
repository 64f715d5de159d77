"""The boxes other holmd run or ran, when several share one postgres store (docs/scale.md).

The journal holds the boxes this holmd runs (and the removed ones it folded); a box that
another holmd runs, or ran and removed, is folded here from the store's changes, which the
feed follower reads anyway (engine/ownership.py). So the reads that every holmd answers from
the shared store itself (`GET /v1/traces`, a removed box's state and trace, the source of a
fork or a diff, a `box.ready` event's viewer pages) see every box, and fold it from the same
entries as the holmd that ran it: the answer is the same whichever holmd is asked, within
the follower's tenth of a second.

Nothing here is acted on: a request that changes a box another holmd runs is forwarded to
that holmd (http/forwarding.py).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from holm.projections.box_state import BoxState, fold_known
from holm.wire.entries import SERVER_TRACE, Entry


class Elsewhere:
    def __init__(self) -> None:
        self._states: dict[str, BoxState] = {}

    def state(self, box_id: str) -> BoxState | None:
        return self._states.get(box_id)

    def keep(self, state: BoxState) -> None:
        """A box this holmd folded and lets go (another holmd runs it): its entries from
        here on come through `fold`."""
        self._states[state.id] = state

    def drop(self, box_id: str) -> None:
        """A box this holmd runs now (it took it over): the journal folds it."""
        self._states.pop(box_id, None)

    def fold(self, trace: str, entries: Sequence[Entry]) -> None:
        """Entries another holmd appended, in seq order; one folded before is ignored (the
        follower may read again what the start-up already folded)."""
        if trace == SERVER_TRACE:
            return
        state = self._states.get(trace)
        fresh = [e for e in entries if state is None or e.seq > state.last_seq]
        if not fresh:
            return
        # An entry that does not fit a box's trace is the owner's to report, not ours.
        state, _ = fold_known(fresh, state)
        if state is not None:
            self._states[trace] = state

    def keep_only(self, traces: Collection[str]) -> None:
        """Forget the boxes whose trace the store no longer keeps (retention)."""
        for box_id in [b for b in self._states if b not in traces]:
            del self._states[box_id]


__all__ = ["Elsewhere"]
