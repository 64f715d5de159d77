"""The reaper: `gone` (by `system`, with the reason) for a box past its deadline or idle too
long, `box_unreachable` then `gone` for a box its runtime lost; starting and failed boxes
are left alone."""

from __future__ import annotations

from engine_kit import MakeEngine, fields, kinds, trace_of

from holm.adapters.memory.runtime import MemoryWorld
from holm.engine import Engine
from holm.engine.journal import now_ms
from holm.engine.reaper import LOST_REASON, reap
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


async def test_a_box_the_runtime_lost_becomes_unreachable_then_gone(
    engine: Engine, world: MemoryWorld
) -> None:
    box = await engine.create_box(Spec(), Placement())
    del world.boxes[box.id]
    assert await engine.reap() == 1
    entries = await trace_of(engine, box.id)
    tail = [e for e in entries if kinds([e])[0] in ("box_unreachable", "gone")]
    assert [(kinds([e])[0], e.actor) for e in tail] == [
        ("box_unreachable", "system"),
        ("gone", "system"),
    ]
    assert [fields(e, "reason") for e in tail] == [{"reason": LOST_REASON}] * 2
    assert engine.boxes() == []


async def test_starting_and_failed_boxes_are_left_alone(make_engine: MakeEngine) -> None:
    engine = await make_engine(jobs="queue")
    starting = await engine.create_box(Spec(), Placement(expires_after_secs=60))
    assert starting.state == "starting"
    assert await reap(engine, now_ms() + 3_600_000) == 0
    assert (await engine.box(starting.id)).state == "starting"
