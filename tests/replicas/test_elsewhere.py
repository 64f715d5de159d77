"""The boxes another holmd runs or ran, as a holmd folds them from the store's changes
(holm/engine/elsewhere.py): the same state as folding the trace whole, whatever the
follower reads twice, and nothing of the server's trace or of a trace the store dropped."""

from __future__ import annotations

from holm.engine.elsewhere import Elsewhere
from holm.projections.box_state import fold_known
from holm.wire.entries import SERVER_TRACE, BoxCreated, BoxDeleted, BoxReady, Entry, FrameSeen
from holm.wire.spec import Placement, Spec, spec_digest


def trace(box_id: str) -> list[Entry]:
    spec = Spec()
    made = BoxCreated(
        seq=0,
        at_ms=1_000,
        actor="agent",
        box_id=box_id,
        runtime="local",
        spec=spec,
        placement=Placement(),
        spec_digest=spec_digest(spec),
        expires_at_ms=3_601_000,
        owner="ws_1",
    )
    ready = BoxReady(seq=1, at_ms=1_001, actor="system", viewer_urls=["ws://x/0"])
    seen = [
        FrameSeen(
            seq=2 + n, at_ms=1_002, actor="system", screen=0, frame=f"px:{n}", width=8, height=8
        )
        for n in range(2)
    ]
    return [made, ready, *seen, BoxDeleted(seq=4, at_ms=1_003, actor="agent")]


def test_what_is_read_again_is_folded_once_and_the_state_is_the_whole_traces() -> None:
    entries = trace("box_a")
    whole, _ = fold_known(entries)
    elsewhere = Elsewhere()
    # Start-up folded the first three; the follower then reads from before them.
    started, _ = fold_known(entries[:3])
    assert started is not None
    elsewhere.keep(started)
    for item in entries:
        elsewhere.fold("box_a", [item])
    elsewhere.fold("box_a", entries)
    assert elsewhere.state("box_a") == whole
    state = elsewhere.state("box_a")
    assert state is not None and state.removed and state.owner == "ws_1"
    assert state.frames_seen == 2


def test_the_server_trace_is_no_box_and_a_dropped_trace_is_forgotten() -> None:
    elsewhere = Elsewhere()
    elsewhere.fold(SERVER_TRACE, trace(SERVER_TRACE))
    assert elsewhere.state(SERVER_TRACE) is None
    for box_id in ("box_a", "box_b"):
        elsewhere.fold(box_id, trace(box_id))
    elsewhere.keep_only({"box_b", SERVER_TRACE})
    assert elsewhere.state("box_a") is None and elsewhere.state("box_b") is not None
    elsewhere.drop("box_b")
    assert elsewhere.state("box_b") is None
