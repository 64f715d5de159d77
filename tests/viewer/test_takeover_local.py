"""Takeover end to end on a real local box: a person gets the screen (the agent is refused
and records nothing), drives it through the control viewer with a real RFB client, what
the person did is recorded as `acted` entries with actor `person`, frames in that period
are the person's, and the agent takes the screen back. Events follow.

One server and one box for the module; its tests run in order."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
import yarl
from http_kit import Client, error_of, ok_json, trace_entries
from local_kit import LocalServer, client_of, new_box, started
from test_viewer_local import open_page, until_title
from viewer_kit import bridge, vnc_do

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[LocalServer]:
    async with started(events_delay_ms=0) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def box(server: LocalServer) -> str:
    return await new_box(server)


async def viewers(client: Client, box: str) -> Any:
    return await ok_json(await client.get(f"/v1/boxes/{box}/screens/0/viewers"))


async def event_kinds(client: Client, box: str) -> list[str]:
    page = await ok_json(await client.get("/v1/events?limit=1000"))
    return [e["kind"] for e in page["events"] if e.get("box_id") == box]


async def test_a_person_takes_over_drives_and_gives_back(server: LocalServer, box: str) -> None:
    client = client_of(server)
    await open_page(client, box)
    assert await viewers(client, box) == {
        "watching": 0,
        "driving": 0,
        "person_driving": False,
        "taken_over": False,
    }
    before = len(await trace_entries(client, box))
    taken = await ok_json(
        await client.post(f"/v1/boxes/{box}/screens/0/takeover", json={"shared": False})
    )
    assert taken["exclusive"] is True and taken["screen"] == 0
    assert (await viewers(client, box))["taken_over"] is True

    # The agent is refused, and its refused batch records nothing.
    agent_click = {"actions": [{"type": "click", "at": {"x": 10, "y": 10}}]}
    refused = await client.post(f"/v1/boxes/{box}/screens/0/actions", json=agent_click)
    assert "person" in await error_of(refused, 409, "denied")
    entries = await trace_entries(client, box)
    started = entries[before:]
    assert [(e["kind"], e["actor"]) for e in started if e["kind"] != "frame"] == [
        ("takeover_started", "agent")
    ]

    # The person drives through the page's ticket (a control ticket).
    ticket = yarl.URL(taken["url"]).query["ticket"]
    socket = f"/v1/boxes/{box}/screens/0/viewer/socket?ticket={ticket}&mode=control"
    steps = [
        ("mouseMove", (640, 450)),
        ("mousePress", (1,)),
        ("keyPress", ("h",)),
        ("keyPress", ("i",)),
        ("keyPress", ("enter",)),
    ]
    async with bridge(client, socket) as port:
        await asyncio.to_thread(vnc_do, port, steps)
    assert await until_title(client, box, "c1khiEnter") == "c1khiEnter - Chromium"

    async def person_entries() -> list[dict[str, Any]]:
        found = await trace_entries(client, box)
        return [e for e in found[before:] if e["actor"] == "person" and e["kind"] == "acted"]

    for _ in range(100):
        acted = await person_entries()
        if len(acted) >= 3:
            break
        await asyncio.sleep(0.1)
    assert [e["action"] for e in acted] == [
        {"type": "click", "at": {"x": 640, "y": 450}},
        # What a person typed is kept sealed under the trace's key, its length in clear.
        {"type": "type"},
        {"type": "press", "chord": ["return"]},
    ]
    typed = acted[1]
    assert typed["bytes"] == 2 and typed["sealed"] and "hi" not in typed["sealed"]
    page = await (await client.get(f"/v1/boxes/{box}/trace/view")).text()
    assert "type •••" in page
    # The screen changed while the person had it: its frames are the person's.
    # (A frame of the agent's screen may land just before the takeover: counted from it.)
    taken_at = next(e["seq"] for e in started if e["kind"] == "takeover_started")
    for _ in range(100):
        frames = [
            e
            for e in await trace_entries(client, box)
            if e["kind"] == "frame" and e["seq"] > taken_at
        ]
        if frames:
            break
        await asyncio.sleep(0.1)
    assert frames and {f["actor"] for f in frames} == {"person"}

    given = await client.delete(f"/v1/boxes/{box}/screens/0/takeover")
    assert await ok_json(given) == {"screen": 0, "taken_over": False}
    last = (await trace_entries(client, box))[-1]
    assert (last["kind"], last["actor"]) == ("takeover_ended", "agent")
    assert (await viewers(client, box))["taken_over"] is False
    await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=agent_click))
    kinds = await event_kinds(client, box)
    assert kinds.index("screen.taken_over") < kinds.index("screen.given_back")


async def test_a_fork_does_again_what_the_person_did_only_when_asked(
    server: LocalServer, box: str
) -> None:
    client = client_of(server)
    body = {"include_person": True}
    forked = await ok_json(await client.post(f"/v1/boxes/{box}/fork", json=body))
    new = forked["box"]["id"]
    assert forked["box"]["viewer_url"].endswith(f"/v1/boxes/{new}/screens/0/view")
    try:
        acted = [e for e in await trace_entries(client, new) if e["kind"] == "acted"]
        replayed = [e["action"] for e in acted]
        # The person's text typed again from its seal, recorded in the fork by a name of
        # its own: the fork's trace does not hold it in clear either.
        typed = next(e for e in acted if e["action"]["type"] == "type")
        assert typed["action"]["secret"].startswith("person_text_") and typed["bytes"] == 2
        assert {"type": "press", "chord": ["return"]} in replayed
        # The page got the person's click and keys again, from the agent this time.
        assert (await until_title(client, new, "c1khiEnter")).startswith("c1khiEnter")
        entries = await trace_entries(client, new)
        assert "takeover_started" not in [e["kind"] for e in entries]
    finally:
        headers = {"x-holm-confirm-delete": "true"}
        await client.delete(f"/v1/boxes/{new}", headers=headers)


async def test_the_trace_page_shows_the_takeover_and_the_frames(
    server: LocalServer, box: str
) -> None:
    client = client_of(server)
    page = await client.get(f"/v1/boxes/{box}/trace/view")
    assert page.status == 200 and page.content_type == "text/html"
    assert "default-src 'none'" in page.headers["Content-Security-Policy"]
    text = await page.text()
    entries = await trace_entries(client, box)
    assert text.count(" data-seq=") == len(entries)
    assert "takeover_started" in text and 'class="row single person taken"' in text
    # The frames and the steps' details as data, and the page's one script.
    assert 'id="frames">[[' in text and text.count("<script") == 3
    await error_of(await client.get("/v1/boxes/box_none/trace/view"), 404, "not_found")


async def test_giving_back_closes_the_person_s_viewer_and_its_ticket(
    server: LocalServer, box: str
) -> None:
    client = client_of(server)
    taken = await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/takeover", json={}))
    ticket = yarl.URL(taken["url"]).query["ticket"]
    socket = f"/v1/boxes/{box}/screens/0/viewer/socket?ticket={ticket}&mode=control"
    ws = await client.ws_connect(socket, protocols=("binary",))
    assert (await ws.receive_bytes()).startswith(b"RFB 003.")
    assert await viewers(client, box) == {
        "watching": 1,
        "driving": 1,
        "person_driving": True,
        "taken_over": True,
    }
    await ok_json(await client.delete(f"/v1/boxes/{box}/screens/0/takeover"))
    closing = await ws.receive()
    assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    await ws.close()
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await client.ws_connect(socket, protocols=("binary",))
    assert refused.value.status == 401


async def test_a_shared_takeover_leaves_the_agent_driving_beside_the_person(
    server: LocalServer, box: str
) -> None:
    client = client_of(server)
    body = {"shared": True}
    taken = await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/takeover", json=body))
    assert taken["exclusive"] is False
    assert (await viewers(client, box))["taken_over"] is True
    move = {"actions": [{"type": "move", "to": {"x": 20, "y": 30}}]}
    await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=move))
    started = [e for e in await trace_entries(client, box) if e["kind"] == "takeover_started"]
    assert started[-1]["shared"] is True
    await ok_json(await client.delete(f"/v1/boxes/{box}/screens/0/takeover"))


async def test_a_takeover_releases_even_what_the_agent_holds_with_a_hold_ms(
    server: LocalServer, box: str
) -> None:
    """rest-api.md: "The server releases a button or key after `hold_ms` …, when the batch
    ends, or when a person takes control": a key held on for 30 s is not left down for the
    person."""
    client = client_of(server)
    hold = {"actions": [{"type": "key_down", "key": "shift", "hold_ms": 30_000}]}
    held = await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=hold))
    assert [h["name"] for h in held["holding_keys"]] == ["shift"]
    await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/takeover", json={}))
    await ok_json(await client.delete(f"/v1/boxes/{box}/screens/0/takeover"))
    nothing = {"actions": [{"type": "wait", "ms": 1}]}
    after = await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=nothing))
    assert after["holding_keys"] == [] and after["released_keys"] == []


async def test_shredding_the_trace_key_loses_the_person_s_text_but_not_the_trace(
    server: LocalServer, box: str
) -> None:
    client = client_of(server)
    before = await trace_entries(client, box)
    shred = await ok_json(await client.delete(f"/v1/boxes/{box}/trace/secrets"))
    assert shred == {"box": box, "shredded": True}
    # The entries, their seq and their seals stay; nothing opens the seals any more.
    assert await trace_entries(client, box) == before
    forked = await ok_json(
        await client.post(f"/v1/boxes/{box}/fork", json={"include_person": True})
    )
    new = forked["box"]["id"]
    try:
        whys = [s["why"] for s in forked["replay"]["skipped"]]
        assert any("shredded" in why for why in whys), whys
        replayed = [e["action"] for e in await trace_entries(client, new) if e["kind"] == "acted"]
        # The rest of the person's steps still fork.
        assert {"type": "press", "chord": ["return"]} in replayed
        assert not [a for a in replayed if a["type"] == "type"]
    finally:
        await client.delete(f"/v1/boxes/{new}", headers={"x-holm-confirm-delete": "true"})
    again = await ok_json(await client.delete(f"/v1/boxes/{box}/trace/secrets"))
    assert again == {"box": box, "shredded": False}
