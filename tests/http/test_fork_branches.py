"""A fork of `count` boxes (beyond the spec, docs/fork.md): k ordinary boxes that replay the
same prefix of the source at once, each trace starting `box_created`, `forked_from`; the
answer lists each box and its report; one idempotency key covers the whole set."""

from __future__ import annotations

from typing import Any

import msgspec
from http_kit import Client, error_of, kinds, new_box, ok_json, trace_entries

from holm.replay.plan import plan_fork
from holm.wire.entries import Entry

_entries = msgspec.json.Decoder(list[Entry])


async def step_keys(client: Client, box_id: str, up_to: int | None = None) -> list[str]:
    """The keys of the steps strict replay would do again, in order."""
    raw = await trace_entries(client, box_id)
    entries = _entries.decode(msgspec.json.encode(raw))
    return [step.key for step in plan_fork(entries, up_to=up_to).steps]


async def source_box(client: Client) -> tuple[str, int]:
    """A box that ran three commands and a click; and the seq of its second command."""
    box = await new_box(client)
    path = f"/v1/boxes/{box}/exec"
    for word in ("one", "two"):
        await ok_json(await client.post(path, json={"argv": ["echo", word]}))
    up_to = max(e["seq"] for e in await trace_entries(client, box))
    batch = {"actions": [{"type": "click", "at": {"x": 5, "y": 6}}]}
    await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=batch))
    await ok_json(await client.post(path, json={"argv": ["echo", "three"]}))
    return box, up_to


async def test_count_four_gives_four_boxes_that_replayed_the_same_prefix(client: Client) -> None:
    source, up_to = await source_box(client)
    answer = await ok_json(
        await client.post(f"/v1/boxes/{source}/fork", json={"up_to": up_to, "count": 4})
    )
    branches: list[dict[str, Any]] = answer["branches"]
    ids = [branch["box"]["id"] for branch in branches]
    assert len(set(ids)) == 4 and source not in ids
    # The spec's fields are the first branch's, for a client that reads only them.
    assert (answer["box"], answer["replay"]) == (branches[0]["box"], branches[0]["replay"])
    wanted = await step_keys(client, source, up_to)
    assert len(wanted) == 2
    for branch in branches:
        assert branch["box"]["state"] == "ready"
        assert (branch["replay"]["attempted"], branch["replay"]["ok"]) == (2, 2)
        entries = await trace_entries(client, branch["box"]["id"])
        assert kinds(entries)[:2] == ["box_created", "forked_from"]
        assert (entries[1]["source"], entries[1]["up_to"]) == (source, up_to)
        # Each branch is a fork like any other: what it did again is the source's prefix.
        assert await step_keys(client, branch["box"]["id"]) == wanted
    listed = {box["id"] for box in (await ok_json(await client.get("/v1/boxes")))["boxes"]}
    assert listed == {source, *ids}


async def test_one_idempotency_key_given_twice_answers_the_same_boxes(client: Client) -> None:
    source, _ = await source_box(client)
    headers = {"idempotency-key": "fork-four"}
    body = {"count": 4}
    first = await ok_json(await client.post(f"/v1/boxes/{source}/fork", json=body, headers=headers))
    again = await client.post(f"/v1/boxes/{source}/fork", json=body, headers=headers)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert await ok_json(again) == first
    boxes = (await ok_json(await client.get("/v1/boxes")))["boxes"]
    assert len(boxes) == 1 + 4


async def test_count_one_answers_as_the_spec_and_a_count_out_of_range_is_refused(
    client: Client,
) -> None:
    source, _ = await source_box(client)
    one = await ok_json(await client.post(f"/v1/boxes/{source}/fork", json={"count": 1}))
    assert set(one) == {"box", "replay"}
    for count in (0, 17, "4"):
        refused = await client.post(f"/v1/boxes/{source}/fork", json={"count": count})
        await error_of(refused, 400, "bad_request")
    assert len((await ok_json(await client.get("/v1/boxes")))["boxes"]) == 2
