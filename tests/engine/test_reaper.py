"""The reaper: `gone` (by `system`, with the reason) for a box past its deadline or idle too
long, `gone` for a box its runtime lost; `box_unreachable` (and back) while its runtime
cannot be reached; starting and failed boxes are left alone."""

from __future__ import annotations

import pytest
from engine_kit import SERVER_ID, MakeEngine, fields, kinds, run, trace_of

from holm.adapters.memory.runtime import MemoryRuntime, MemoryWorld
from holm.engine import Engine
from holm.engine.journal import now_ms
from holm.engine.reaper import UNREACHABLE_REASON, reap
from holm.errors import Unavailable
from holm.projections import LOST_REASON
from holm.wire.entries import BoxGone, Executed
from holm.wire.spec import Placement, Spec


async def test_expired_and_idle_boxes_are_removed(engine: Engine, world: MemoryWorld) -> None:
    short = await engine.create_box(Spec(), Placement(expires_after_secs=60))
    idle = await engine.create_box(Spec(), Placement(idle_timeout_secs=120))
    keep = await engine.create_box(Spec(), Placement())
    assert await reap(engine, now_ms()) == 0
    # 61 s later the short box is past its deadline; the idle one has 59 s left.
    assert await reap(engine, now_ms() + 61_000) == 1
    assert await reap(engine, now_ms() + 121_000) == 1
    assert [b.id for b in engine.boxes()] == [keep.id]
    assert short.id not in world.boxes and idle.id not in world.boxes
    for box_id, reason in ((short.id, "expired"), (idle.id, "idle")):
        last = (await trace_of(engine, box_id))[-1]
        assert isinstance(last, BoxGone) and last.actor == "system"
        assert last.reason.startswith(reason)
        state = await engine.box(box_id)
        assert state.removed and state.state == "gone"


async def test_use_keeps_a_box_from_going_idle(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement(idle_timeout_secs=60))
    created = (await engine.box(box.id)).created_at_ms
    # The server's own entries (box_ready, frames are the agent's) do not count as use;
    # an agent's entry does, and the idle clock starts again from it.
    await engine.journal.append(
        box.id,
        [
            Executed(
                seq=0,
                at_ms=created + 50_000,
                actor="agent",
                argv=["true"],
                code=0,
                timed_out=False,
                key="k",
            )
        ],
    )
    assert (await engine.box(box.id)).last_used_ms == created + 50_000
    assert await reap(engine, created + 61_000) == 0
    assert await reap(engine, created + 110_000) == 1


async def test_a_box_the_runtime_lost_is_gone(engine: Engine, world: MemoryWorld) -> None:
    box = await engine.create_box(Spec(), Placement())
    del world.boxes[box.id]
    assert await engine.reap() == 1
    entries = await trace_of(engine, box.id)
    tail = [e for e in entries if kinds([e])[0] in ("box_unreachable", "gone")]
    assert [(kinds([e])[0], e.actor) for e in tail] == [("gone", "system")]
    assert [fields(e, "reason") for e in tail] == [{"reason": LOST_REASON}]
    assert engine.boxes() == []


async def test_a_runtime_that_cannot_be_reached_makes_its_boxes_unreachable_not_gone(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    runtime = MemoryRuntime(server_id=SERVER_ID, world=world)
    engine = await make_engine(runtime=runtime)
    box = await engine.create_box(Spec(), Placement(idle_timeout_secs=60))
    paused = await engine.create_box(Spec(), Placement())
    await engine.pause_box(paused.id)
    runtime.reachable = False
    assert await reap(engine, now_ms()) == 0
    for box_id in (box.id, paused.id):
        state = await engine.box(box_id)
        assert (state.state, state.removed) == ("unreachable", False)
        assert str(state.reason).startswith(UNREACHABLE_REASON)
    # Its trace reads; calls into it are refused as worth trying again.
    assert kinds(await trace_of(engine, box.id))[-1] == "box_unreachable"
    with pytest.raises(Unavailable) as refused:
        await run(engine, box.id, "true")
    assert refused.value.status == 503 and refused.value.retryable
    with pytest.raises(Unavailable):
        await engine.pause_box(box.id)
    # Nobody could use it: it does not go idle, and reaping again records nothing more.
    assert await reap(engine, now_ms() + 120_000) == 0
    assert kinds(await trace_of(engine, box.id)).count("box_unreachable") == 1
    # Reachable again: each box is what its runtime says.
    runtime.reachable = True
    assert await reap(engine, now_ms()) == 0
    back = await engine.box(box.id)
    assert back.state == "ready" and back.viewer_urls
    assert (await engine.box(paused.id)).state == "paused"
    assert (await run(engine, box.id, "echo", "hi")).stdout == "hi\n"
    # Unreachable, and the runtime answers without it: gone.
    runtime.reachable = False
    await reap(engine, now_ms())
    runtime.reachable = True
    del world.boxes[box.id]
    assert await reap(engine, now_ms()) == 1
    gone = await engine.box(box.id)
    assert (gone.state, gone.reason) == ("gone", LOST_REASON)


async def test_an_unreachable_box_goes_at_its_deadline(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    runtime = MemoryRuntime(server_id=SERVER_ID, world=world)
    engine = await make_engine(runtime=runtime)
    box = await engine.create_box(Spec(), Placement(expires_after_secs=60))
    runtime.reachable = False
    assert await reap(engine, now_ms()) == 0
    assert await reap(engine, now_ms() + 61_000) == 1
    gone = await engine.box(box.id)
    assert gone.removed and str(gone.reason).startswith("expired")
    assert kinds(await trace_of(engine, box.id))[-2:] == ["box_unreachable", "gone"]


async def test_starting_and_failed_boxes_are_left_alone(make_engine: MakeEngine) -> None:
    engine = await make_engine(jobs="queue")
    starting = await engine.create_box(Spec(), Placement(expires_after_secs=60))
    assert starting.state == "starting"
    assert await reap(engine, now_ms() + 3_600_000) == 0
    assert (await engine.box(starting.id)).state == "starting"
