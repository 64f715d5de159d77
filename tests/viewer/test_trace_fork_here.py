""" "Fork from here" on the served trace page, end to end: Playwright drives a headless
Chromium (Debian's) on the page of a real local box, served by holmd with a bearer token;
it scrubs the filmstrip back to an earlier frame and presses the button with the keyboard;
the page forks the box up to that step with the grant it carries (never the token), and
opens the new box's live viewer, which connects. A refused fork is said in the page.

One server and one source box for the module; every box is removed at the end."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
import pytest_asyncio
from http_kit import Client, ok_json
from local_kit import LocalServer, client_of, started
from playwright.async_api import Browser, Page, Request, Route, async_playwright
from trace_page_kit import CHROMIUM, needs_chromium

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module"), needs_chromium]

TOKEN = "tok-fork-from-here-0123"
SERVER = {"Authorization": f"Bearer {TOKEN}"}
# Three pages, each a screen of its own: three frames kept after the box's first.
WORDS = ("alpha", "bravo", "charlie")


def page_of(word: str) -> str:
    body = f"<body style='margin:0;background:#fff'><h1 style='font-size:140px'>{word}</h1>"
    return "data:text/html," + quote(f"<title>{word}</title>{body}")


async def entries_of(client: Client, box: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    after = -1
    while True:
        page = await ok_json(
            await client.get(f"/v1/boxes/{box}/trace?after={after}", headers=SERVER)
        )
        entries += page["entries"]
        if not page["more"]:
            return entries
        after = page["next"]


async def frame_after(client: Client, box: str, seq: int) -> int:
    """The seq of the first `frame` entry after `seq`, once the frame watcher wrote one."""
    for _ in range(200):
        frames = [
            e["seq"]
            for e in await entries_of(client, box)
            if e["kind"] == "frame" and e["seq"] > seq
        ]
        if frames:
            return frames[0]
        await asyncio.sleep(0.1)
    seen = [(e["seq"], e["kind"]) for e in await entries_of(client, box)]
    raise AssertionError(f"no frame was recorded after step {seq} of {box}: {seen}")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[LocalServer]:
    async with started(events_delay_ms=0, server_token=TOKEN) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def source(server: LocalServer) -> dict[str, int | str]:
    """A box that opened three pages, each followed by a frame it drew: the box, and the
    seq of the first frame after the first page was opened (the watcher records it while
    the batch goes on, before its `wait_still`)."""
    client = client_of(server)
    box = (await ok_json(await client.post("/v1/boxes", json={}, headers=SERVER)))["id"]
    after: list[int] = []
    for word in WORDS:
        body = {"actions": [{"type": "open_url", "url": page_of(word)}, {"type": "wait_still"}]}
        path = f"/v1/boxes/{box}/screens/0/actions"
        await ok_json(await client.post(path, json=body, headers=SERVER))
        opened = max(
            e["seq"]
            for e in await entries_of(client, box)
            if e["kind"] == "acted" and e["action"]["type"] == "open_url"
        )
        after.append(await frame_after(client, box, opened))
    return {"box": box, "first_frame": after[0]}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield launched
        await launched.close()


async def opened(browser: Browser, server: LocalServer, box: str) -> tuple[Page, list[Request]]:
    """The served trace page, as a browser given the token for that one request would
    open it: the token rides on the page's own request only, not on what its script
    sends. Every request the page makes is kept."""
    page = await browser.new_page()
    sent: list[Request] = []
    page.on("request", lambda request: sent.append(request))
    url = str(client_of(server).make_url(f"/v1/boxes/{box}/trace/view"))

    async def with_token(route: Route) -> None:
        await route.continue_(
            headers={**route.request.headers, "authorization": SERVER["Authorization"]}
        )

    await page.route(url, with_token)
    await page.goto(url)
    return page, sent


async def centre(page: Page, selector: str) -> tuple[float, float]:
    box = await page.locator(selector).bounding_box()
    assert box is not None
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


async def scrub(page: Page, start: int, end: int) -> None:
    """A drag along the filmstrip, from the thumb of step `start` to that of `end`."""
    await page.locator("#strip").scroll_into_view_if_needed()
    x0, y0 = await centre(page, f'#strip .thumb[data-step="{start}"]')
    x1, _ = await centre(page, f'#strip .thumb[data-step="{end}"]')
    await page.mouse.move(x0, y0)
    await page.mouse.down()
    await page.mouse.move(x1, y0, steps=8)
    await page.mouse.up()


async def chosen_seq(page: Page) -> int:
    return int(await page.locator("#entries .row.chosen").get_attribute("data-seq") or -1)


async def watching(client: Client, box: str) -> int:
    """How many viewers watch the box's screen 0, once one came (or the tries ran out)."""
    count = 0
    for _ in range(300):
        viewers = await ok_json(
            await client.get(f"/v1/boxes/{box}/screens/0/viewers", headers=SERVER)
        )
        count = viewers["watching"]
        if count:
            return int(count)
        await asyncio.sleep(0.1)
    return int(count)


async def test_scrubbing_back_and_forking_opens_the_live_viewer_of_a_fork_up_to_that_step(
    server: LocalServer, source: dict[str, Any], browser: Browser
) -> None:
    client = client_of(server)
    box, up_to = source["box"], source["first_frame"]
    entries = await entries_of(client, box)
    page, sent = await opened(browser, server, box)

    # Opened on the last entry; the filmstrip holds every kept frame.
    frames = [e["seq"] for e in entries if e["kind"] == "frame"]
    assert await chosen_seq(page) == entries[-1]["seq"]
    assert [
        int(s or -1)
        for s in await page.locator("#strip .thumb").evaluate_all(
            "(thumbs) => thumbs.map((t) => t.dataset.step)"
        )
    ] == frames
    assert frames.index(up_to) < len(frames) - 1

    # Back along the strip to the frame the first page drew.
    await scrub(page, frames[-1], up_to)
    assert await chosen_seq(page) == up_to
    button = page.get_by_role("button", name=re.compile("^Fork from here"))
    assert await button.text_content() == f"Fork from here (up to step {up_to})"

    # The keyboard: focused and pressed, as a person without a mouse would.
    await button.focus()
    await page.keyboard.press("Enter")
    await page.wait_for_url(re.compile(r"/v1/viewer/novnc/vnc\.html\?"), timeout=120_000)

    forks = [
        b
        for b in (await ok_json(await client.get("/v1/boxes", headers=SERVER)))["boxes"]
        if b["id"] != box
    ]
    assert len(forks) == 1
    fork = forks[0]
    assert fork["forked_from"] == {"source": box, "up_to": up_to}
    # The viewer opened is the fork's screen 0, and it is live: holmd counts its viewer.
    (socket,) = parse_qs(urlsplit(page.url).query)["path"]
    assert socket.startswith(f"v1/boxes/{fork['id']}/screens/0/viewer/socket?ticket=vt_")
    assert await watching(client, fork["id"]) == 1

    # The fork's trace ends at that step: it did again the source's steps up to it, no more.
    forked = await entries_of(client, fork["id"])
    assert [e["kind"] for e in forked[:2]] == ["box_created", "forked_from"]
    assert (forked[1]["source"], forked[1]["up_to"]) == (box, up_to)
    wanted = [e["key"] for e in entries if e["kind"] == "acted" and e["seq"] <= up_to]
    done = [e["key"] for e in forked if e["kind"] == "acted"]
    assert done == wanted and 0 < len(wanted) < len([e for e in entries if e["kind"] == "acted"])

    # What the page sent was its grant, never the token; and only to its own server.
    posts = [r for r in sent if r.method == "POST"]
    assert [r.url.split("/v1/boxes/")[1].split("/", 1)[1] for r in posts] == [
        "fork",
        "screens/0/viewer/ticket",
    ]
    for request in posts:
        said = (await request.all_headers())["authorization"]
        assert said.startswith("Bearer pg_") and TOKEN not in said
    await page.close()
    await ok_json(
        await client.delete(
            f"/v1/boxes/{fork['id']}", headers={**SERVER, "x-holm-confirm-delete": "true"}
        )
    )


async def test_a_refused_fork_is_said_in_the_page(
    server: LocalServer, source: dict[str, Any], browser: Browser
) -> None:
    client = client_of(server)
    page, _ = await opened(browser, server, source["box"])
    before = {
        b["id"] for b in (await ok_json(await client.get("/v1/boxes", headers=SERVER)))["boxes"]
    }
    # A grant the server never made (as a stale page's expired one is): refused, 401.
    await page.evaluate("document.getElementById('fork').dataset.grant = 'pg_never-made'")
    button = page.get_by_role("button", name=re.compile("^Fork from here"))
    await button.click()
    said = page.locator("#fork .said")
    await said.filter(has_text="failed").wait_for()
    text = await said.text_content()
    step = await chosen_seq(page)
    assert text is not None and text.startswith(f"Fork from step {step} failed: denied: ")
    assert "reload the trace page" in text
    assert await said.get_attribute("role") == "status"
    # Still the trace page, the button usable again, and no box was made.
    assert "/trace/view" in page.url and await button.is_enabled()
    after = {
        b["id"] for b in (await ok_json(await client.get("/v1/boxes", headers=SERVER)))["boxes"]
    }
    assert after == before
    await page.close()
