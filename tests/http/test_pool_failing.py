"""A warm pool whose spares do not start, through the HTTP API: `GET /v1/runtimes/{name}`
says why and when the pool tries again, the events feed has `pool.failing`, and a create
answers the runtime's reason at once: it starts its box cold, never waits for a spare."""

from __future__ import annotations

import asyncio

from http_kit import MakeClient, engine_of, error_of, ok_json

from holm.adapters.memory.runtime import MemoryRuntime, MemoryWorld
from holm.config import parse_pool

WHY = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"
# The bound on a wait for the pool: a refill that hangs fails the test instead.
FILL_WAIT_S = 30.0


async def test_a_pool_whose_spares_do_not_start_says_why(
    make_client: MakeClient, world: MemoryWorld
) -> None:
    runtime = MemoryRuntime(world=world)
    runtime.fail_create = WHY
    client = await make_client(runtime=runtime, pool=parse_pool("default:1"), events_delay_ms=0)
    pool = engine_of(client).pool
    assert pool is not None
    await asyncio.wait_for(pool.filled(), FILL_WAIT_S)
    view = await ok_json(await client.get("/v1/runtimes/memory"))
    (status,) = view["pool"]
    assert (status["count"], status["ready"], status["booting"], status["known"]) == (
        1,
        0,
        0,
        True,
    )
    assert (status["failures"], status["last_failure"]) == (1, WHY)
    assert status["next_retry_at_ms"] - status["last_failure_at_ms"] == 10_000
    listed = await ok_json(await client.get("/v1/runtimes"))
    assert [r["pool"] for r in listed["runtimes"]] == [[status]]
    events = (await ok_json(await client.get("/v1/events")))["events"]
    (failing,) = [e for e in events if e["kind"] == "pool.failing"]
    assert failing["runtime"] == "memory" and failing["data"]["why"] == WHY
    assert failing["data"]["retry_at_ms"] == status["next_retry_at_ms"]
    # No spare: the create starts its box cold, and says why it did not start.
    created = client.post("/v1/boxes", json={})
    message = await error_of(await asyncio.wait_for(created, FILL_WAIT_S), 422, "failed")
    assert WHY in message


async def test_a_runtime_without_a_pool_shows_none(make_client: MakeClient) -> None:
    client = await make_client()
    view = await ok_json(await client.get("/v1/runtimes/memory"))
    assert "pool" not in view
