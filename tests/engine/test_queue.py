"""Queued jobs (`HOLM_SERVER_JOBS=queue`): a create answers a `starting` box at once; the
launch runs later (here: when the scheduler calls run), and the box becomes `ready` or
`failed`; meanwhile it refuses calls with `denied`."""

from __future__ import annotations

import pytest
from engine_kit import SERVER_ID, MakeEngine, kinds, run, trace_of

from holm.adapters.memory.runtime import MemoryRuntime, MemoryWorld
from holm.engine import Engine
from holm.errors import Denied
from holm.replay.interpreter import fork_box
from holm.wire.api import ForkRequest
from holm.wire.spec import Placement, Spec


async def test_a_queued_create_starts_when_the_jobs_run(make_engine: MakeEngine) -> None:
    engine = await make_engine(jobs="queue")
    box = await engine.create_box(Spec(), Placement())
    assert box.state == "starting"
    assert kinds(await trace_of(engine, box.id)) == ["box_created"]
    with pytest.raises(Denied, match="starting"):
        await run(engine, box.id, "true")
    assert await engine.run_jobs() == 1
    assert (await engine.box(box.id)).state == "ready"
    assert await engine.run_jobs() == 0


async def test_a_queued_create_that_fails(make_engine: MakeEngine, world: MemoryWorld) -> None:
    runtime = MemoryRuntime(server_id=SERVER_ID, world=world)
    runtime.fail_create = "the image is missing"
    engine = await make_engine(jobs="queue", runtime=runtime)
    box = await engine.create_box(Spec(), Placement())
    assert await engine.run_jobs() == 1
    failed = await engine.box(box.id)
    assert (failed.state, failed.reason) == ("failed", "the image is missing")
    with pytest.raises(Denied, match="failed to start"):
        await run(engine, box.id, "true")


async def test_a_box_deleted_while_queued_never_starts(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    engine = await make_engine(jobs="queue")
    box = await engine.create_box(Spec(), Placement())
    await engine.delete_box(box.id)
    await engine.run_jobs()
    assert box.id not in world.boxes
    assert kinds(await trace_of(engine, box.id)) == ["box_created", "box_deleted"]


async def test_a_fork_of_a_starting_or_failed_box_is_refused(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    runtime = MemoryRuntime(server_id=SERVER_ID, world=world)
    engine = await make_engine(jobs="queue", runtime=runtime)
    starting = await engine.create_box(Spec(), Placement())
    with pytest.raises(Denied, match="starting") as refused:
        await fork_box(engine, starting.id, ForkRequest())
    assert refused.value.status == 409 and refused.value.retryable
    runtime.fail_create = "the image is missing"
    await engine.run_jobs()
    assert (await engine.box(starting.id)).state == "failed"
    with pytest.raises(Denied, match="failed") as refused:
        await fork_box(engine, starting.id, ForkRequest())
    assert refused.value.status == 409 and not refused.value.retryable
    # Nothing was recorded for the refused forks.
    assert [s.id for s in engine.boxes()] == [starting.id]
    # A removed box's trace stays, and forks.
    runtime.fail_create = None
    ready = await engine.create_box(Spec(), Placement())
    await engine.run_jobs()
    await engine.delete_box(ready.id)
    forked = await fork_box(engine, ready.id, ForkRequest())
    assert forked.box.state == "starting"


async def test_a_fork_starts_with_a_fresh_profile_unless_its_placement_names_one(
    engine: Engine,
) -> None:
    source = await engine.create_box(Spec(), Placement(profile="work", persistent=True))
    forked = await fork_box(engine, source.id, ForkRequest())
    placement = (await engine.box(forked.box.id)).placement
    assert placement is not None
    assert placement.profile is None and placement.persistent
    assert placement.runtime == source.runtime
    named = await fork_box(engine, source.id, ForkRequest(placement=Placement(profile="other")))
    placement = (await engine.box(named.box.id)).placement
    assert placement is not None and placement.profile == "other"
