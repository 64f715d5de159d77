""" "Fork from here" on a server whose runtime has no viewer (a holmd of its own on the
in-memory runtime), in a headless Chromium driven by Playwright: a row chosen with a click
is the fork's `up_to`; the fork is made, and that its viewer cannot be opened is said in
the page, naming the fork, rather than swallowed."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from e2e_kit import Holmd, memory_holmd
from playwright.async_api import Browser, Route, async_playwright
from trace_page_kit import CHROMIUM, needs_chromium

from holm.client import SyncHolmClient
from holm.wire.entries import Executed

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module"), needs_chromium]
server = memory_holmd


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield launched
        await launched.close()


async def test_a_fork_whose_viewer_cannot_open_is_said_in_the_page(
    server: Holmd, browser: Browser
) -> None:
    token = server.token
    assert token is not None
    with SyncHolmClient(server.url, token) as client:
        box = client.create_box().id
        for word in ("one", "two", "three"):
            client.exec(box, ["echo", word])
        ran = [e.seq for e in client.trace(box).entries if isinstance(e, Executed)]

    page = await browser.new_page()
    url = f"{server.url}/v1/boxes/{box}/trace/view"

    async def with_token(route: Route) -> None:
        headers = {**route.request.headers, "authorization": f"Bearer {token}"}
        await route.continue_(headers=headers)

    await page.route(url, with_token)
    await page.goto(url)
    await page.locator(f'#entries .row[data-seq="{ran[1]}"]').click()
    button = page.get_by_role("button", name=f"Fork from here (up to step {ran[1]})")
    await button.click()
    said = page.locator("#fork .said")
    await said.filter(has_text="could not be opened").wait_for()

    with SyncHolmClient(server.url, token) as client:
        (fork,) = [b for b in client.list_boxes() if b.id != box]
        assert fork.forked_from is not None
        assert (fork.forked_from.source, fork.forked_from.up_to) == (box, ran[1])
        # It did again the two commands up to that step, not the third.
        again = [e.argv for e in client.trace(fork.id).entries if isinstance(e, Executed)]
        assert again == [["echo", "one"], ["echo", "two"]]
        for made in (fork.id, box):
            client.delete_box(made)
    text = await said.text_content()
    assert text is not None
    assert re.fullmatch(
        rf"Forked up to step {ran[1]} as {fork.id}, but its viewer could not be opened: "
        r"unsupported: .*no viewer.*",
        text,
    )
    assert "/trace/view" in page.url and await button.is_enabled()
    await page.close()
