"""Provider `holm` over a back holmd of real local boxes: a person's viewer through the
front server's relay, and Playwright through the front's DevTools relay, reach the far
box's x11vnc and Chromium across both servers' stream relays."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from http_kit import Client, ok_json
from local_kit import LocalServer
from page_kit import page
from playwright.async_api import async_playwright
from vendor_kit import BACK_TOKEN, front_server, holm_vendor

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

# X displays no other test uses.
DISPLAY_BASE = 560


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def far(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Client, str]]:
    """The front server and a box of it on the back server's local runtime."""
    back = LocalServer(DISPLAY_BASE)
    try:
        client = await back.start(server_token=BACK_TOKEN)
        url = str(client.make_url("")).rstrip("/")
        async with front_server(tmp_path_factory.mktemp("front")) as front:
            await ok_json(await front.post("/v1/runtimes", json=holm_vendor("far", url)))
            placed = {"placement": {"runtime": "far"}}
            box = await ok_json(await front.post("/v1/boxes", json=placed))
            assert box["state"] == "ready", box
            yield front, str(box["id"])
            with contextlib.suppress(Exception):
                await front.delete(
                    f"/v1/boxes/{box['id']}", headers={"x-holm-confirm-delete": "true"}
                )
    finally:
        await back.remove_everything()


async def test_a_viewer_through_the_front_relay_reaches_the_far_screen(
    far: tuple[Client, str],
) -> None:
    front, box = far
    made = await ok_json(
        await front.post(f"/v1/boxes/{box}/screens/0/viewer/ticket", json={"mode": "view"})
    )
    socket = f"/v1/boxes/{box}/screens/0/viewer/socket?ticket={made['ticket']}&mode=view"
    async with front.ws_connect(socket, protocols=("binary",)) as ws:
        greeting = await ws.receive(timeout=30)
        assert greeting.data == b"RFB 003.008\n"
        await ws.send_bytes(b"RFB 003.008\n")
        # x11vnc offers one security type, None.
        assert (await ws.receive(timeout=30)).data == b"\x01\x01"


async def test_playwright_through_the_front_devtools_relay_drives_the_far_browser(
    far: tuple[Client, str],
) -> None:
    front, box = far
    opened = await front.post(
        f"/v1/boxes/{box}/screens/0/actions",
        json={"actions": [{"type": "open_url", "url": page("<title>Far away</title>")}]},
    )
    assert (await ok_json(opened))["results"][0]["ok"] is True
    address = await ok_json(await front.post(f"/v1/boxes/{box}/cdp"))
    assert f"{front.host}:{front.port}/v1/cdp/" in address["url"]
    async with async_playwright() as playwright:
        browser = await playwright.chromium.connect_over_cdp(address["url"])
        try:
            pages = [p for c in browser.contexts for p in c.pages]
            titles = [await p.title() for p in pages]
            assert "Far away" in titles, titles
        finally:
            await browser.close()
