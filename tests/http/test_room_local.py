"""The edge of a host, on real local boxes (bubblewrap, Xvfb; no Chromium, to keep them
light): `GET /v1/runtimes/local` says how many more boxes fit, the count goes down as boxes
are made, and the box past the limit is refused with the documented `503 unavailable`
(`retryable`, the limit named) before anything of it is made: no trace, no folder, no
process. A retry once a box is gone succeeds."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from http_kit import Client, error_of, ok_json
from local_kit import LocalServer

from holm.adapters.local import procs
from holm.adapters.local.records import read_records
from holm.wire.entries import SERVER_TRACE

pytestmark = [pytest.mark.desktop]

CONFIRM = {"x-holm-confirm-delete": "true"}
# Apart from the displays of the other local-box tests (local_kit.DISPLAY_BASE).
DISPLAY_BASE = 555


async def room(client: Client) -> dict[str, Any]:
    view = await ok_json(await client.get("/v1/runtimes/local"))
    found: dict[str, Any] = view["room"]
    return found


def box_processes(server: LocalServer) -> dict[str, list[int]]:
    """The processes of each box the runtime has a folder for."""
    found = {}
    for record in read_records(server.state_dir / "boxes"):
        assert record.init_pid is not None and record.init_start is not None
        found[record.box_id] = procs.tree(record.init_pid, record.init_start)
    return found


def traced_boxes(server: LocalServer) -> set[str]:
    store = server.state_dir / "traces"
    return {path.stem for path in store.glob("*.jsonl")} - {SERVER_TRACE}


def box_folders(server: LocalServer) -> set[str]:
    boxes = server.state_dir / "boxes"
    return {path.name for path in boxes.iterdir() if path.is_dir()}


async def fill_until_refused(
    server: LocalServer, client: Client, limit: int, named: str
) -> list[str]:
    boxes = []
    before = await room(client)
    assert (before["boxes"], before["limit"], before["running"]) == (limit, named, 0)
    for made in range(1, limit + 1):
        created = await ok_json(await client.post("/v1/boxes", json={}))
        assert created["state"] == "ready"
        boxes.append(created["id"])
        now = await room(client)
        assert (now["boxes"], now["running"]) == (limit - made, made)
        assert now["by"][named] == limit - made
    full = await room(client)
    assert full["limit"] == named and full["boxes"] == 0

    refused = await client.post("/v1/boxes", json={})
    message = await error_of(refused, 503, "unavailable")
    assert (await refused.json())["retryable"] is True
    # Nothing half-made: no trace of another box, no folder, no process.
    assert traced_boxes(server) == set(boxes)
    assert box_folders(server) == set(boxes)
    running = box_processes(server)
    assert set(running) == set(boxes) and all(running.values())
    listed = await ok_json(await client.get("/v1/boxes"))
    assert sorted(box["id"] for box in listed["boxes"]) == sorted(boxes)
    return [message, *boxes]


async def test_the_box_past_holm_max_boxes_is_refused_and_nothing_of_it_stays() -> None:
    server = LocalServer(DISPLAY_BASE, max_boxes=3, chromium=False)
    try:
        client = await server.start(events_delay_ms=0)
        message, *boxes = await fill_until_refused(server, client, 3, "max_boxes")
        assert "HOLM_MAX_BOXES is 3" in message

        # A retry once a box is gone succeeds: the refusal was honest about `retryable`.
        # Of three creates at once for the one place, one gets it.
        deleted = await client.delete(f"/v1/boxes/{boxes[0]}", headers=CONFIRM)
        await ok_json(deleted)
        assert (await room(client))["boxes"] == 1
        answers = await asyncio.gather(*(client.post("/v1/boxes", json={}) for _ in range(3)))
        statuses = sorted(answer.status for answer in answers)
        assert statuses == [200, 503, 503]
        (made,) = [await answer.json() for answer in answers if answer.status == 200]
        assert made["state"] == "ready"
        now = {*boxes[1:], made["id"]}
        assert traced_boxes(server) - {boxes[0]} == now
        assert box_folders(server) == now
    finally:
        await server.remove_everything()


async def test_a_box_for_which_no_display_number_is_left_is_refused_first() -> None:
    server = LocalServer(DISPLAY_BASE + 10, display_count=2, chromium=False)
    try:
        client = await server.start(events_delay_ms=0)
        message, *_ = await fill_until_refused(server, client, 2, "displays")
        assert message.startswith("no room for another local box: displays")
    finally:
        await server.remove_everything()
