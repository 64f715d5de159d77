"""Requests sent on by a holmd that does not run the box (holm/http/forwarding.py and its
kept-alive connections, owner_links.py), through the two real holmd of the replicas'
shared pair (A runs the boxes, B sends on), each as the owner answers it:

- clicks through B, one after another on one client connection, are answered as A
  answers them (one `content-length`, no hop header, no forwarding mark) and recorded
  once each, in order; an idempotency key through B replays the first answer;
- the path and query go on as the client sent them (a file name with a space and a `%`),
  a body sent after `Expect: 100-continue` arrives whole, a HEAD is answered;
- B refuses what it refuses for its own routes (another origin, a Host that is not its
  own) and A what it refuses (no token, another workspace's box: as absent);
- a box whose holmd died is answered `503 unavailable`, retryable, through B, for a click
  as for a read (its connections to the dead holmd are not reused)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from kits.holmd import Holmd
from replica_kit import ok, whole_trace

CONFIRM = {"x-holm-confirm-delete": "true"}


def click_at(x: int, y: int) -> dict[str, Any]:
    return {"actions": [{"type": "click", "at": {"x": x, "y": y}}]}


async def made_on(http: aiohttp.ClientSession, server: Holmd) -> str:
    return str((await ok(await http.post(f"{server.url}/v1/boxes", json={})))["id"])


@pytest.fixture
async def box(pair: tuple[Holmd, Holmd], http: aiohttp.ClientSession) -> AsyncIterator[str]:
    """A box A runs, removed after the test."""
    made = await made_on(http, pair[0])
    yield made
    await ok(await http.delete(f"{pair[0].url}/v1/boxes/{made}", headers=CONFIRM))


async def test_clicks_sent_on_are_answered_as_the_owner_answers_and_recorded_once(
    pair: tuple[Holmd, Holmd], http: aiohttp.ClientSession, box: str
) -> None:
    a, b = pair
    actions = f"/v1/boxes/{box}/screens/0/actions"
    direct = await http.post(f"{a.url}{actions}", json=click_at(1, 1))
    for n in range(2, 12):
        answer = await http.post(f"{b.url}{actions}", json=click_at(n, n))
        body = await answer.json()
        assert answer.status == 200, body
        assert [step["ok"] for step in body["results"]] == [True]
        assert len(answer.headers.getall("Content-Length")) == 1
        assert answer.headers["Content-Type"] == direct.headers["Content-Type"]
        assert "x-holm-forwarded-by" not in answer.headers
        assert "Transfer-Encoding" not in answer.headers

    # The same key twice through B: one click, the first answer replayed.
    keyed = {"Idempotency-Key": secrets.token_hex(8)}
    first = await http.post(f"{b.url}{actions}", json=click_at(50, 50), headers=keyed)
    again = await http.post(f"{b.url}{actions}", json=click_at(50, 50), headers=keyed)
    assert first.status == again.status == 200
    assert await first.json() == await again.json()
    assert again.headers["Idempotent-Replayed"] == "true"

    trace = await whole_trace(http, a.url, box)
    clicked = [item["action"]["at"] for item in trace if item["kind"] == "acted"]
    assert clicked == [{"x": n, "y": n} for n in [*range(1, 12), 50]]


async def test_the_path_query_and_body_go_on_as_the_client_sent_them(
    pair: tuple[Holmd, Holmd], http: aiohttp.ClientSession, box: str
) -> None:
    a, b = pair
    files = f"/v1/boxes/{box}/files"
    path = "/tmp/a b%20c.txt"
    data = "d2hhdCBjYW1lIHRocm91Z2g="
    write = {"path": path, "contents_base64": data}
    # With `Expect: 100-continue`: B answers the 100 itself and sends the body on whole.
    saved = await http.put(f"{b.url}{files}", json=write, expect100=True)
    assert (await saved.json())["size"] == len("what came through")
    read = await ok(await http.get(f"{b.url}{files}", params={"path": path}))
    assert read["contents_base64"] == data
    assert (await ok(await http.get(f"{a.url}{files}", params={"path": path})))[
        "contents_base64"
    ] == data
    head = await http.head(f"{b.url}/v1/boxes/{box}")
    assert head.status == 200 and await head.read() == b""


async def test_each_holmd_refuses_what_it_refuses_for_its_own_boxes(
    pair: tuple[Holmd, Holmd], http: aiohttp.ClientSession, box: str
) -> None:
    a, b = pair
    status = f"{b.url}/v1/boxes/{box}"
    # B's own guards, before anything is sent on.
    other_origin = await http.get(status, headers={"Origin": "http://evil.example"})
    assert other_origin.status == 403 and (await other_origin.json())["code"] == "denied"
    other_host = await http.get(status, headers={"Host": "evil.example"})
    assert other_host.status == 421 and (await other_host.json())["code"] == "denied"
    # A's: the token, and a workspace's key on a box that is not the workspace's.
    async with aiohttp.ClientSession() as anonymous:
        refused = await anonymous.get(status)
        assert refused.status == 401 and (await refused.json())["code"] == "denied"
    name = "fwd-" + secrets.token_hex(4)
    await ok(await http.post(f"{a.url}/v1/workspaces", json={"name": name}))
    key = (await ok(await http.post(f"{a.url}/v1/keys", json={"workspace": name})))["key"]
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {key}"}) as theirs:
        absent = await theirs.get(status)
        assert absent.status == 404 and (await absent.json())["code"] == "not_found"
        click = await theirs.post(f"{status}/screens/0/actions", json=click_at(3, 3))
        assert click.status == 404
    trace = await whole_trace(http, a.url, box)
    assert not [item for item in trace if item["kind"] == "acted"]


async def test_a_box_whose_holmd_died_is_unavailable_and_retryable_through_another(
    pair: tuple[Holmd, Holmd], http: aiohttp.ClientSession
) -> None:
    a, b = pair
    settings = {k: v for k, v in a.settings.items() if k != "HOLM_POOL"}
    c = Holmd(runtime="memory", **settings)
    # Holmd's own calls block (close runs an event loop of its own): in a thread.
    await asyncio.to_thread(c.start)
    try:
        box = await made_on(http, c)
        actions = f"{b.url}/v1/boxes/{box}/screens/0/actions"
        # B holds a kept-alive connection to C now.
        for n in range(3):
            await ok(await http.post(actions, json=click_at(n, n)))
        await asyncio.to_thread(c.kill)
        for _ in range(2):
            for answer in (
                await http.post(actions, json=click_at(9, 9)),
                await http.get(f"{b.url}/v1/boxes/{box}"),
            ):
                body = await answer.json()
                assert answer.status == 503, body
                assert body["code"] == "unavailable" and body["retryable"] is True
    finally:
        await asyncio.to_thread(c.close)
