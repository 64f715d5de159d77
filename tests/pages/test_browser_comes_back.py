"""A box's browser cannot be lost: closing its last window (a DevTools client's
`page.close()` of the last page, or `alt+F4`) ends Chromium, and the agent starts it again
with the same profile on a blank page; every page route then works again, a new
`POST …/cdp` reaches the new browser, and the trace says so (`browser_restarted`)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from http_kit import Client, ok_json, trace_entries
from local_kit import LocalServer, client_of, started
from page_kit import page
from playwright.async_api import async_playwright

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

CONFIRM = {"x-holm-confirm-delete": "true"}
# The profile outlives the browser: what a page kept in localStorage is there after (a file
# page: a `data:` page has an opaque origin, with no storage).
KEPT = "file:///tmp/kept.html"


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[LocalServer]:
    async with started(display_base=380, events_delay_ms=0) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def box(server: LocalServer) -> AsyncIterator[str]:
    client = client_of(server)
    box_id = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    yield box_id
    await ok_json(await client.delete(f"/v1/boxes/{box_id}", headers=CONFIRM))


async def batch(client: Client, box: str, actions: list[Any]) -> Any:
    url = f"/v1/boxes/{box}/screens/0/actions"
    return await ok_json(await client.post(url, json={"actions": actions}))


async def restarts(client: Client, box: str) -> list[dict[str, Any]]:
    return [e for e in await trace_entries(client, box) if e["kind"] == "browser_restarted"]


async def recorded(client: Client, box: str, count: int) -> list[dict[str, Any]]:
    """The trace's `browser_restarted` entries once there are `count` (bounded polling of
    a state, not a timing)."""
    for _ in range(150):
        found = await restarts(client, box)
        if len(found) >= count:
            return found
        await asyncio.sleep(0.1)
    return await restarts(client, box)


async def every_page_route_works(client: Client, box: str) -> None:
    base = f"/v1/boxes/{box}"
    # The first call after the close already answers: a route waits for the browser.
    tabs = await ok_json(await client.get(f"{base}/pages"))
    assert tabs["tabs"], tabs
    opened = await batch(client, box, [{"type": "open_url", "url": page("<title>Back</title>")}])
    assert opened["results"][0]["ok"], opened["results"][0]
    assert [t["title"] for t in opened["tabs"]] == ["Back"], opened["tabs"]
    read = await ok_json(await client.get(f"{base}/page"))
    assert read["title"] == "Back"
    value = await ok_json(
        await client.post(
            f"{base}/page/evaluate",
            json={"expression": "new Promise(r => setTimeout(() => r(location.href), 0))"},
        )
    )
    assert value["value"].startswith("data:text/html")
    snap = await ok_json(await client.get(f"{base}/page/snapshot"))
    assert snap["title"] == "Back"
    shot = await ok_json(await client.post(f"{base}/page/screenshot", json={}))
    assert shot["width"] > 0
    assert (await ok_json(await client.get(f"{base}/cookies")))["cookies"] == []


async def kept_in_the_profile(client: Client, box: str, keep: bool = False) -> Any:
    """What the file page reads from localStorage (before, with `keep`, it keeps its own)."""
    contents = base64.b64encode(b"<title>Kept</title>").decode()
    write = {"type": "write_file", "what": {"path": "/tmp/kept.html", "contents_base64": contents}}
    read = {"type": "evaluate", "what": {"expression": "localStorage.getItem('who')"}}
    steps = [write, {"type": "open_url", "url": KEPT}, read]
    if keep:
        kept = "localStorage.setItem('who', 'Ada')"
        steps.append({"type": "evaluate", "what": {"expression": kept}})
    got = await batch(client, box, steps)
    assert all(r["ok"] for r in got["results"]), got
    return got["results"][2]["value"]["value"]


async def test_closing_the_last_page_over_devtools_brings_the_browser_back(
    server: LocalServer, box: str
) -> None:
    client = client_of(server)
    assert await kept_in_the_profile(client, box, keep=True) is None
    before = len(await restarts(client, box))
    address = await ok_json(await client.post(f"/v1/boxes/{box}/cdp"))
    async with async_playwright() as playwright:
        browser = await playwright.chromium.connect_over_cdp(address["url"])
        pages = [p for c in browser.contexts for p in c.pages]
        assert len(pages) == 1, pages
        await pages[0].close()
        await browser.close()

    await every_page_route_works(client, box)
    entries = await recorded(client, box, before + 1)
    assert len(entries) == before + 1, entries
    assert (entries[-1]["actor"], entries[-1]["screen"]) == ("system", 0)
    assert "last window" in entries[-1]["why"] and entries[-1]["failure"] is None
    # A new address reaches the new browser, and a client drives it.
    again = await ok_json(await client.post(f"/v1/boxes/{box}/cdp"))
    async with async_playwright() as playwright:
        browser = await playwright.chromium.connect_over_cdp(again["url"])
        titles = [await p.title() for c in browser.contexts for p in c.pages]
        assert titles == ["Back"], titles
        await browser.close()
    # Same profile: what the page kept before is there.
    assert await kept_in_the_profile(client, box) == "Ada"


async def test_alt_f4_brings_the_browser_back(server: LocalServer, box: str) -> None:
    client = client_of(server)
    before = len(await restarts(client, box))
    pressed = await batch(client, box, [{"type": "press", "chord": ["alt", "F4"]}])
    assert pressed["results"][0]["ok"], pressed

    await every_page_route_works(client, box)
    entries = await recorded(client, box, before + 1)
    assert len(entries) == before + 1, entries
    again = await ok_json(await client.post(f"/v1/boxes/{box}/cdp"))
    async with async_playwright() as playwright:
        browser = await playwright.chromium.connect_over_cdp(again["url"])
        assert [await p.title() for c in browser.contexts for p in c.pages] == ["Back"]
        await browser.close()
