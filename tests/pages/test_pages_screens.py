"""Every screen has its own Chromium and profile (boxes.md), and every page route reaches
the one `screen` names in its query (default 0); a batch's page steps go to the batch's
screen. One box of two screens for the module, on a server behind a TLS proxy
(`HOLM_PUBLIC_URL`), whose DevTools addresses are the proxy's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from http_kit import Client, error_of, ok_json
from local_kit import LocalServer, client_of, started
from page_kit import page

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

CONFIRM = {"x-holm-confirm-delete": "true"}
PUBLIC = "https://holm.example.test"
SECOND = page("<title>Second</title><label>Name <input id=n></label>")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[LocalServer]:
    async with started(display_base=390, events_delay_ms=0, public_url=PUBLIC) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def box(server: LocalServer) -> AsyncIterator[str]:
    client = client_of(server)
    spec = {"spec": {"desktop": {"screens": 2}}}
    box_id = (await ok_json(await client.post("/v1/boxes", json=spec)))["id"]
    yield box_id
    await ok_json(await client.delete(f"/v1/boxes/{box_id}", headers=CONFIRM))


async def batch(client: Client, box: str, screen: int, actions: list[Any]) -> Any:
    url = f"/v1/boxes/{box}/screens/{screen}/actions"
    got = await ok_json(await client.post(url, json={"actions": actions}))
    assert all(r["ok"] for r in got["results"]), got["results"]
    return got


async def test_each_page_route_reaches_the_screen_it_names(server: LocalServer, box: str) -> None:
    client = client_of(server)
    base = f"/v1/boxes/{box}"
    one = {"screen": "1"}
    # A batch on screen 1 opens the page in screen 1's Chromium only.
    opened = await batch(client, box, 1, [{"type": "open_url", "url": SECOND, "label": "s"}])
    assert [t["title"] for t in opened["tabs"]] == ["Second"]
    tab = opened["results"][0]["value"]["tab"]
    front = await ok_json(await client.get(f"{base}/pages"))
    assert [t["title"] for t in front["tabs"]] == ["about:blank"]
    second = await ok_json(await client.get(f"{base}/pages", params=one))
    listed = [(t["tab"], t["title"], t.get("label")) for t in second["tabs"]]
    assert listed == [(tab, "Second", "s")]

    assert (await ok_json(await client.get(f"{base}/page", params=one)))["title"] == "Second"
    found = await ok_json(await client.get(f"{base}/page/find", params={**one, "q": "Name"}))
    assert found["total"] == 1
    snap = await ok_json(await client.get(f"{base}/page/snapshot", params=one))
    assert [c["name"] for c in snap["controls"]] == ["Name"]
    filled = await ok_json(
        await client.post(
            f"{base}/page/element", params=one, json={"op": "fill", "query": "Name", "text": "Ada"}
        )
    )
    assert filled["element"]["value"] == "Ada"
    title = {"expression": "document.title"}
    assert (await ok_json(await client.post(f"{base}/page/evaluate", json=title)))["value"] == ""
    evaluated = await ok_json(await client.post(f"{base}/page/evaluate", params=one, json=title))
    assert evaluated["value"] == "Second"
    shot = await ok_json(await client.post(f"{base}/page/screenshot", params=one, json={}))
    assert shot["tab"] == tab
    pdf = await client.post(f"{base}/page/pdf", params=one, json={"path": "/tmp/second.pdf"})
    assert (await ok_json(pdf))["size"] > 0
    console = await client.post(f"{base}/page/console", params=one, json={})
    assert (await ok_json(console))["messages"] == []
    assert (await ok_json(await client.post(f"{base}/pages/s/focus", params=one)))["tab"] == tab
    # No screen 2 in this box; a screen past the spec's limit is a bad query.
    await error_of(await client.get(f"{base}/pages", params={"screen": "2"}), 404, "not_found")
    await error_of(await client.get(f"{base}/pages", params={"screen": "9"}), 400, "bad_request")
    assert (await ok_json(await client.delete(f"{base}/pages/{tab}", params=one)))["closed"]


async def test_cookies_and_state_belong_to_each_screen_s_profile(
    server: LocalServer, box: str
) -> None:
    client = client_of(server)
    base = f"/v1/boxes/{box}"
    one = {"screen": "1"}
    url = "http://screens.test/"
    jar = {"url": url, "cookies": [{"name": "sid", "value": "one"}]}
    assert (await ok_json(await client.post(f"{base}/cookies", params=one, json=jar)))["changed"]
    on_one = await ok_json(await client.get(f"{base}/cookies", params={**one, "url": url}))
    assert [(c["name"], c["value"]) for c in on_one["cookies"]] == [("sid", "one")]
    on_zero = await ok_json(await client.get(f"{base}/cookies", params={"url": url}))
    assert on_zero["cookies"] == []

    saved = await ok_json(await client.post(f"{base}/state/save", params=one, json={}))
    assert saved["cookies"] == 1
    zero = await ok_json(await client.post(f"{base}/state/save", json={}))
    assert zero["cookies"] == 0
    # Loaded into screen 0's profile, the cookie is there too.
    load = {"session_json": saved["session_json"]}
    assert (await ok_json(await client.post(f"{base}/state/load", json=load)))["cookies"] == 1
    again = await ok_json(await client.get(f"{base}/cookies", params={"url": url}))
    assert [(c["name"], c["value"]) for c in again["cookies"]] == [("sid", "one")]
    cleared = await ok_json(await client.delete(f"{base}/cookies", params=one))
    assert cleared["changed"] == 1
    assert (await ok_json(await client.get(f"{base}/cookies", params=one)))["cookies"] == []


async def test_devtools_addresses_are_the_public_ones(server: LocalServer, box: str) -> None:
    client = client_of(server)
    # The box shows where to ask for a DevTools address, never the socket on holmd's host.
    shown = await ok_json(await client.get(f"/v1/boxes/{box}"))
    assert shown["devtools_url"] == f"{PUBLIC}/v1/boxes/{box}/cdp"
    address = await ok_json(await client.post(f"/v1/boxes/{box}/cdp"))
    assert address["url"].startswith(f"{PUBLIC}/v1/cdp/")
    assert address["ws_url"].startswith("wss://holm.example.test/v1/cdp/")
    assert "/devtools/browser/" in address["ws_url"]
    # The relayed answers name the proxy's address too (a client follows them there).
    path = address["url"].removeprefix(PUBLIC)
    targets = await ok_json(await client.get(f"{path}/json/list"))
    pages = [t for t in targets if t.get("type") == "page"]
    assert pages and all(
        t["webSocketDebuggerUrl"].startswith(f"wss://holm.example.test{path}/devtools/page/")
        for t in pages
    )
    assert all("wss=holm.example.test" in t["devtoolsFrontendUrl"] for t in pages)


async def test_a_devtools_address_reaches_the_screen_it_names(
    server: LocalServer, box: str
) -> None:
    """`POST …/cdp?screen=1` relays to screen 1's own Chromium: its targets are that
    screen's pages (screen 0's Chromium has only its blank tab)."""
    client = client_of(server)

    async def titles(screen: int) -> list[str]:
        address = await ok_json(await client.post(f"/v1/boxes/{box}/cdp?screen={screen}"))
        path = address["url"].removeprefix(PUBLIC)
        targets = await ok_json(await client.get(f"{path}/json/list"))
        return sorted(t["title"] for t in targets if t.get("type") == "page")

    await batch(client, box, 1, [{"type": "open_url", "url": SECOND, "target": "blank"}])
    assert "Second" in await titles(1)
    assert "Second" not in await titles(0)
    await error_of(await client.post(f"/v1/boxes/{box}/cdp?screen=2"), 404, "not_found")
