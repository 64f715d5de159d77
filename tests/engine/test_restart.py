"""A restarted server: rebuilds every box from the log, adopts what its runtime still has,
and each trace continues; what the runtime lost goes, what the log lost is adopted."""

from __future__ import annotations

from engine_kit import SERVER_ID, MakeEngine, kinds, trace_of

from holm.adapters.memory.runtime import MemoryBox, MemoryRuntime, MemoryWorld
from holm.engine.adoption import STOPPED_WHILE_STARTING
from holm.wire.actions import Click
from holm.wire.api import ActionsRequest
from holm.wire.entries import Adopted
from holm.wire.spec import DesktopSpec, Placement, Spec
from holm.wire.values import Point

CLICK = ActionsRequest(actions=[Click(at=Point(x=1, y=2))])


async def test_with_the_local_store_each_trace_continues(make_engine: MakeEngine) -> None:
    first = await make_engine(store="local")
    box = await first.create_box(Spec(), Placement())
    await first.run_batch(box.id, 0, CLICK)
    await first.pause_box(box.id)
    before = await trace_of(first, box.id)
    second = await make_engine(store="local")
    state = await second.box(box.id)
    assert (state.state, state.adopted) == ("paused", False)
    await second.resume_box(box.id)
    await second.run_batch(box.id, 0, CLICK)
    after = await trace_of(second, box.id)
    assert after[: len(before)] == before
    assert [e.seq for e in after] == list(range(len(after)))
    assert "adopted" not in kinds(after)


async def test_a_box_the_runtime_no_longer_has_goes(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    first = await make_engine(store="local")
    box = await first.create_box(Spec(), Placement())
    del world.boxes[box.id]
    second = await make_engine(store="local")
    assert second.boxes() == []
    assert kinds(await trace_of(second, box.id))[-2:] == ["box_ready", "gone"]


async def test_a_box_the_log_lost_is_adopted_with_what_the_runtime_kept(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    spec = Spec(desktop=DesktopSpec(width=800, height=600))
    placement = Placement(runtime="memory", expires_after_secs=900)
    orphan = MemoryBox("box_orphan", spec, placement, SERVER_ID)
    world.boxes[orphan.box_id] = orphan
    # Another server's box is not this server's to adopt.
    world.boxes["box_other"] = MemoryBox("box_other", spec, placement, "srv_other")
    engine = await make_engine(store="local")
    assert [b.id for b in engine.boxes()] == ["box_orphan"]
    (adopted, *_) = await trace_of(engine, "box_orphan")
    assert isinstance(adopted, Adopted) and adopted.actor == "system"
    assert (adopted.spec, adopted.placement) == (spec, placement)
    assert adopted.expires_at_ms == orphan.created_at_ms + 900_000
    state = await engine.box("box_orphan")
    assert (state.state, state.adopted, state.width, state.height) == ("ready", True, 800, 600)
    await engine.run_batch("box_orphan", 0, CLICK)


async def test_with_the_memory_store_adopted_boxes_start_a_new_trace(
    make_engine: MakeEngine,
) -> None:
    first = await make_engine()
    box = await first.create_box(Spec(), Placement())
    paused = await first.create_box(Spec(), Placement())
    await first.run_batch(box.id, 0, CLICK)
    await first.pause_box(paused.id)
    second = await make_engine()
    entries = await trace_of(second, box.id)
    # Where the desktop answers comes from the runtime: its viewers and DevTools stay.
    assert kinds(entries) == ["adopted", "box_ready"] and entries[0].seq == 0
    assert kinds(await trace_of(second, paused.id)) == ["adopted", "box_ready", "box_paused"]
    for made, state in [(box, "ready"), (paused, "paused")]:
        again = await second.box(made.id)
        assert again.state == state and again.viewer_urls == made.viewer_urls != ()


async def test_a_box_that_was_starting_when_the_server_stopped(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    first = await make_engine(store="local", jobs="queue")
    lost = await first.create_box(Spec(), Placement())
    came_up = await first.create_box(Spec(), Placement())
    # The server stopped before its jobs ran; one box came up all the same.
    world.boxes[came_up.id] = MemoryBox(came_up.id, Spec(), Placement(), SERVER_ID)
    second = await make_engine(store="local")
    failed = await second.box(lost.id)
    assert (failed.state, failed.reason) == ("failed", STOPPED_WHILE_STARTING)
    assert kinds(await trace_of(second, came_up.id))[:2] == ["box_created", "adopted"]
    assert (await second.box(came_up.id)).state == "ready"


async def test_what_the_runtime_did_meanwhile_is_recorded(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    first = await make_engine(store="local")
    box = await first.create_box(Spec(), Placement())
    removed = await first.create_box(Spec(), Placement())
    await first.delete_box(removed.id)
    world.boxes[box.id].state = "paused"
    # The runtime still has a box the log says was removed (its delete was lost).
    world.boxes[removed.id] = MemoryBox(removed.id, Spec(), Placement(), SERVER_ID)
    runtime = MemoryRuntime(server_id=SERVER_ID, world=world)
    second = await make_engine(store="local", runtime=runtime)
    assert (await second.box(box.id)).state == "paused"
    last = (await trace_of(second, box.id))[-1]
    assert (kinds([last])[0], last.actor) == ("box_paused", "system")
    assert removed.id not in world.boxes


async def test_a_runtime_that_cannot_be_reached_at_start_up_loses_nothing(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    first = await make_engine(store="local")
    box = await first.create_box(Spec(), Placement())
    runtime = MemoryRuntime(server_id=SERVER_ID, world=world)
    runtime.reachable = False
    second = await make_engine(store="local", runtime=runtime)
    state = await second.box(box.id)
    assert (state.state, state.removed) == ("unreachable", False)
    assert [b.id for b in second.boxes()] == [box.id]
    runtime.reachable = True
    await second.reap()
    assert (await second.box(box.id)).state == "ready"
    assert kinds(await trace_of(second, box.id))[-2:] == ["box_unreachable", "box_ready"]
