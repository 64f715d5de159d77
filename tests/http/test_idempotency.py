"""`idempotency-key` on create, actions and fork: the same key and body answer the first
result without doing the work again (also while the first is still running); the same key
with another body is refused."""

from __future__ import annotations

import asyncio
import json

from http_kit import Client, MakeClient, error_of, kinds, new_box, ok_json, trace_entries

from holm.adapters.memory.runtime import MemoryRuntime, MemoryWorld


async def test_the_same_key_and_body_create_one_box(client: Client) -> None:
    headers = {"idempotency-key": "create-1"}
    body = {"spec": {"desktop": {"width": 800, "height": 600}}}
    first = await client.post("/v1/boxes", json=body, headers=headers)
    first_body = await first.read()
    # Key order and spacing do not make another body.
    again = await client.post(
        "/v1/boxes",
        data=json.dumps(body, indent=4).encode(),
        headers={**headers, "content-type": "application/json"},
    )
    assert (again.status, await again.read()) == (first.status, first_body)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert len((await ok_json(await client.get("/v1/boxes")))["boxes"]) == 1


async def test_a_request_waits_for_the_first_one_with_its_key(
    make_client: MakeClient, world: MemoryWorld
) -> None:
    client = await make_client(runtime=MemoryRuntime(world=world, create_delay=0.2))
    headers = {"idempotency-key": "slow-create"}
    answers = await asyncio.gather(
        *(client.post("/v1/boxes", json={}, headers=headers) for _ in range(5))
    )
    bodies = {await a.read() for a in answers}
    assert len(bodies) == 1 and {a.status for a in answers} == {200}
    assert len(world.boxes) == 1


async def test_actions_are_not_done_twice(client: Client) -> None:
    box = await new_box(client)
    batch = {"actions": [{"type": "exec", "what": {"argv": ["echo", "once"]}}]}
    headers = {"idempotency-key": "act-1"}
    path = f"/v1/boxes/{box}/screens/0/actions"
    first = await ok_json(await client.post(path, json=batch, headers=headers))
    second = await ok_json(await client.post(path, json=batch, headers=headers))
    assert first == second
    steps = [e for e in await trace_entries(client, box) if e["kind"] == "acted"]
    assert len(steps) == 1
    # Without a key, the same batch runs again.
    await ok_json(await client.post(path, json=batch))
    assert kinds(await trace_entries(client, box)).count("acted") == 2


async def test_a_key_with_another_body_is_refused(client: Client) -> None:
    headers = {"idempotency-key": "create-2"}
    await ok_json(await client.post("/v1/boxes", json={}, headers=headers))
    other = {"placement": {"expires_after_secs": 600}}
    response = await client.post("/v1/boxes", json=other, headers=headers)
    message = await error_of(response, 409, "denied")
    assert "another body" in message and "create-2" in message


async def test_an_error_is_the_first_result_too(client: Client) -> None:
    headers = {"idempotency-key": "bad-1"}
    body = {"placement": {"expires_after_secs": 5}}
    first = await client.post("/v1/boxes", json=body, headers=headers)
    await error_of(first, 400, "bad_request")
    second = await client.post("/v1/boxes", json=body, headers=headers)
    await error_of(second, 400, "bad_request")
    assert second.headers["Idempotent-Replayed"] == "true"


async def test_keys_are_per_route(client: Client) -> None:
    headers = {"idempotency-key": "same"}
    box = await new_box(client)
    await ok_json(await client.post("/v1/boxes", json={}, headers=headers))
    batch = {"actions": [{"type": "cursor"}]}
    path = f"/v1/boxes/{box}/screens/0/actions"
    assert (await ok_json(await client.post(path, json=batch, headers=headers)))["results"]
