"""The warm pool over the in-memory runtime: spares come up to their count and no further,
a create that fits takes one and is ready at once under the spare's ID with the trace a cold
box gets, and no spare outlives the server or is adopted by the next one. (The same against
real boxes: tests/http/test_pool_local.py.)"""

from __future__ import annotations

import asyncio

import pytest
from engine_kit import SERVER_ID, MakeEngine, kinds, trace_of

from holm.adapters.memory.runtime import MemoryBox, MemoryRuntime, MemoryWorld
from holm.config import load_config, parse_pool
from holm.engine import Engine
from holm.engine.pool import WarmPool
from holm.errors import Failed, Unsupported
from holm.wire.entries import SERVER_TRACE, BoxCreated, Entry, PoolFailing, PoolRecovered
from holm.wire.spec import DesktopSpec, Placement, Spec, spec_digest

SMALL = Spec(desktop=DesktopSpec(width=800, height=600))
# The bound on a wait for the pool: a refill that hangs fails the test instead.
FILL_WAIT_S = 30.0


def spares(world: MemoryWorld) -> list[str]:
    return sorted(box.box_id for box in world.boxes.values() if box.spare)


async def pooled(make_engine: MakeEngine, counts: dict[str, int], **settings: object) -> Engine:
    engine = await make_engine(pool=counts, **settings)
    assert engine.pool is not None
    await engine.pool.filled()
    return engine


async def test_spares_come_up_to_their_count_in_no_trace(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    engine = await pooled(make_engine, parse_pool("default:2"))
    assert len(spares(world)) == 2
    assert engine.boxes() == []
    assert await engine.traces() == []


async def test_a_create_that_fits_takes_a_spare_and_the_pool_refills(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    engine = await pooled(make_engine, parse_pool("default:2"))
    assert engine.pool is not None
    before = spares(world)
    box = await engine.create_box(Spec(), Placement(expires_after_secs=600), owner="ws_a")
    assert box.id in before and box.state == "ready" and box.owner == "ws_a"
    created, *after = await trace_of(engine, box.id)
    assert isinstance(created, BoxCreated)
    assert created.placement == Placement(runtime="memory", expires_after_secs=600)
    assert kinds(after) == ["box_ready"]
    assert not world.boxes[box.id].spare
    await engine.pool.filled()
    assert len(spares(world)) == 2 and box.id not in spares(world)


async def test_a_pooled_box_and_a_cold_one_have_the_same_trace(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    engine = await pooled(make_engine, parse_pool("default:1"))
    warm = await engine.create_box(Spec(), Placement())
    # A persistent box is not what the pool boots: started cold, its spec the same.
    cold = await engine.create_box(Spec(), Placement(persistent=True))
    assert cold.id not in spares(world) and warm.id != cold.id
    warm_trace, cold_trace = await trace_of(engine, warm.id), await trace_of(engine, cold.id)
    assert kinds(warm_trace) == kinds(cold_trace) == ["box_created", "box_ready"]


@pytest.mark.parametrize(
    "spec, placement",
    [(SMALL, Placement()), (Spec(), Placement(persistent=True)), (Spec(), Placement(profile="p"))],
)
async def test_what_the_pool_does_not_keep_starts_cold(
    make_engine: MakeEngine, world: MemoryWorld, spec: Spec, placement: Placement
) -> None:
    engine = await pooled(make_engine, parse_pool("default:1"))
    before = spares(world)
    box = await engine.create_box(spec, placement)
    assert box.id not in before and spares(world) == before


async def test_a_refused_create_leaves_the_spares_alone(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    engine = await pooled(make_engine, parse_pool("default:1"))
    before = spares(world)
    with pytest.raises(Unsupported):
        await engine.create_box(Spec(), Placement(memory="1g"))
    assert spares(world) == before


async def test_a_spec_named_by_digest_is_kept_once_a_box_showed_it(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    engine = await make_engine(pool={spec_digest(SMALL): 1})
    assert engine.pool is not None
    await engine.pool.filled()
    assert spares(world) == []
    first = await engine.create_box(SMALL, Placement())
    await engine.pool.filled()
    (spare,) = spares(world)
    second = await engine.create_box(SMALL, Placement())
    assert first.id != spare and second.id == spare


async def test_a_spare_that_died_gives_way_to_a_cold_start_under_its_id(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    engine = await pooled(make_engine, parse_pool("default:1"))
    (spare,) = spares(world)
    del world.boxes[spare]
    box = await engine.create_box(Spec(), Placement())
    assert box.id == spare and box.state == "ready"
    assert kinds(await trace_of(engine, box.id)) == ["box_created", "box_ready"]


async def test_the_pool_is_empty_when_the_server_stops(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    engine = await pooled(make_engine, parse_pool("default:2"))
    box = await engine.create_box(Spec(), Placement())
    await engine.close()
    assert spares(world) == []
    assert list(world.boxes) == [box.id]


async def test_a_restarted_server_removes_the_spares_left_and_adopts_none(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    left = MemoryBox("box_left", Spec(), Placement(runtime="memory"), SERVER_ID)
    left.spare = True
    other = MemoryBox("box_others", Spec(), Placement(runtime="memory"), "srv_other")
    other.spare = True
    world.boxes.update({left.box_id: left, other.box_id: other})
    engine = await make_engine()
    assert "box_left" not in world.boxes and "box_others" in world.boxes
    assert engine.boxes() == []


async def test_a_box_whose_take_the_stop_broke_fails(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    first = await make_engine(store="local")
    box_id = await first.record_box(Spec(), Placement(), box_id="box_taken")
    # The server stopped after recording the box and before the runtime gave it the spare.
    taken = MemoryBox(box_id, Spec(), Placement(runtime="memory"), SERVER_ID)
    taken.spare = True
    world.boxes[box_id] = taken
    second = await make_engine(store="local")
    assert box_id not in world.boxes
    assert (await second.box(box_id)).state == "failed"


@pytest.mark.parametrize("text", ["default", "default:x", "sha256:abc:1", "mine:2"])
def test_a_malformed_pool_setting_names_it(text: str) -> None:
    with pytest.raises(ValueError, match="HOLM_POOL"):
        load_config({"HOLM_POOL": text})


def test_the_pool_setting_counts_by_digest() -> None:
    digest = spec_digest(SMALL)
    config = load_config({"HOLM_POOL": f"default:2, {digest}:1"})
    assert config.pool == {spec_digest(Spec()): 2, digest: 1}


async def test_spares_that_keep_failing_back_off_and_say_why(world: MemoryWorld) -> None:
    runtime = MemoryRuntime(server_id=SERVER_ID, world=world)
    why = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"
    runtime.fail_create = why
    recorded: list[Entry] = []

    async def record(entries: list[Entry]) -> None:
        recorded.extend(entries)

    ids = iter(range(1000))
    pool = WarmPool(
        parse_pool("default:1"),
        runtime,
        lambda: f"box_spare{next(ids)}",
        retry_secs=0.01,
        max_retry_secs=0.04,
        record=record,
    )
    pool.learn(Spec())
    # The refill ends as soon as it fails: it does not hang whoever waits for it.
    await asyncio.wait_for(pool.filled(), FILL_WAIT_S)
    (first,) = pool.status()
    assert (first.failures, first.last_failure, first.ready, first.booting) == (1, why, 0, 0)
    assert first.next_retry_at_ms is not None and first.last_failure_at_ms is not None
    assert first.next_retry_at_ms - first.last_failure_at_ms == 10
    # Each wait twice the last, up to the cap (10, 20, 40, 40 ms).
    for _ in range(500):
        (now,) = pool.status()
        if now.failures >= 4:
            break
        await asyncio.sleep(0.01)
    assert now.failures >= 4 and now.next_retry_at_ms is not None
    assert now.next_retry_at_ms - (now.last_failure_at_ms or 0) == 40
    # Said once in the trace, not at every try.
    assert [type(e) for e in recorded] == [PoolFailing]
    assert isinstance(recorded[0], PoolFailing) and recorded[0].why == why
    runtime.fail_create = None
    for _ in range(500):
        if pool.spares(Spec()):
            break
        await asyncio.sleep(0.01)
    (mended,) = pool.status()
    assert (mended.ready, mended.failures, mended.last_failure) == (1, 0, None)
    assert [type(e) for e in recorded] == [PoolFailing, PoolRecovered]
    await pool.close()


async def test_a_create_with_no_spare_on_a_failing_runtime_fails_with_the_reason(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    runtime = MemoryRuntime(server_id=SERVER_ID, world=world)
    runtime.fail_create = "no room for a box"
    engine = await make_engine(pool=parse_pool("default:1"), runtime=runtime)
    assert engine.pool is not None
    await asyncio.wait_for(engine.pool.filled(), FILL_WAIT_S)
    with pytest.raises(Failed, match="no room for a box"):
        await asyncio.wait_for(engine.create_box(Spec(), Placement()), FILL_WAIT_S)
    server = await engine.store.read(SERVER_TRACE, None, 100)
    (failing,) = [e for e in server if isinstance(e, PoolFailing)]
    assert (failing.runtime, failing.why) == ("memory", "no room for a box")
