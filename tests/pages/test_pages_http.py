"""Pages end to end through holmd on real local boxes: a batch of page actions recorded as
`acted` and done again by a fork, the page routes, and the REST example of the reference."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
import pytest_asyncio
from http_kit import Client, ok_json, trace_entries
from local_kit import LocalServer
from page_kit import site_actions

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

CONFIRM = {"x-holm-confirm-delete": "true"}
PORT = 8712
ADA_SITE = {
    "index.html": """<title>Sign up</title>
<form action="details.html">
  <label for="name">Name</label> <input id="name" name="name">
  <button>Continue</button>
</form>""",
    "details.html": """<title>Details</title><h1>Details</h1><p id="who"></p>
<script>who.textContent = new URLSearchParams(location.search).get("name");</script>""",
}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[LocalServer]:
    running = LocalServer(display_base=370)
    try:
        await running.start(events_delay_ms=0)
        yield running
    finally:
        await running.remove_everything()


def client_of(server: LocalServer) -> Client:
    assert server.client is not None
    return server.client


def site_steps(files: dict[str, str], port: int) -> list[Any]:
    return [msgspec.to_builtins(step) for step in site_actions(files, port)]


async def batch(client: Client, box: str, actions: list[Any], **body: Any) -> Any:
    url = f"/v1/boxes/{box}/screens/0/actions"
    return await ok_json(await client.post(url, json={"actions": actions, **body}))


async def evaluate(client: Client, box: str, expression: str) -> Any:
    step = {"type": "evaluate", "what": {"expression": expression}}
    result = await batch(client, box, [step])
    assert result["results"][0]["ok"], result
    return result["results"][0]["value"]["value"]


async def test_the_ada_run_is_recorded_and_a_fork_lands_on_details(server: LocalServer) -> None:
    client = client_of(server)
    source = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    steps = [
        *site_steps(ADA_SITE, PORT),
        {"type": "open_url", "url": f"http://127.0.0.1:{PORT}/index.html", "label": "signup"},
        {"type": "on_page", "what": {"op": "fill", "query": "Name", "text": "Ada"}},
        {"type": "on_page", "what": {"op": "click", "query": "Continue"}},
        {"type": "on_page", "what": {"op": "wait_for", "query": "Details"}},
    ]
    result = await batch(client, source, steps)
    assert [r["ok"] for r in result["results"]] == [True] * len(steps), result["results"]
    filled, clicked, waited = (r["value"] for r in result["results"][-3:])
    assert filled["element"]["name"] == "Name" and filled["element"]["value"] == "Ada"
    assert clicked["element"]["role"] == "button" and clicked["navigated"]
    assert waited["url"] == f"http://127.0.0.1:{PORT}/details.html?name=Ada"
    assert [t["title"] for t in result["tabs"] if t.get("label") == "signup"] == ["Details"]

    acted = [e for e in await trace_entries(client, source) if e["kind"] == "acted"]
    pages = [e["action"] for e in acted if e["action"]["type"] == "on_page"]
    assert [p["what"]["op"] for p in pages] == ["fill", "click", "wait_for"]

    forked = await ok_json(await client.post(f"/v1/boxes/{source}/fork", json={}))
    new = forked["box"]["id"]
    assert forked["replay"]["ok"] == forked["replay"]["attempted"], forked["replay"]
    assert await evaluate(client, new, "document.querySelector('h1').textContent") == "Details"
    assert await evaluate(client, new, "who.textContent") == "Ada"
    for box in (source, new):
        await ok_json(await client.delete(f"/v1/boxes/{box}", headers=CONFIRM))
