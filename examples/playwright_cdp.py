"""Playwright on a holm box, through its DevTools relay: the connection browser-use uses.

    export HOLM_SERVER_URL=http://127.0.0.1:8080  HOLM_SERVER_TOKEN=…
    python examples/playwright_cdp.py https://example.com

`POST /v1/boxes/{id}/cdp` answers an address of the box's Chromium that needs no token
(the address is the ticket, for `ttl_secs`): `url` for Playwright's `connect_over_cdp`
and for browser-use (`Browser(cdp_url=url)`), `ws_url` for a raw CDP client. The
browser is the box's: the pages it opens, the requests it makes (`route.fetch()` too) go
out from the box's network, and a download is written to the box's disk, where
`box.files` (`GET /v1/boxes/{id}/files`) reads it, not to this machine's.
"""

from __future__ import annotations

import sys
from typing import Any

from playwright.sync_api import sync_playwright

from holm import Box


def drive(box: Box, url: str, download: str | None = None) -> dict[str, Any]:
    """Open `url` in the box's browser with Playwright; what the page said, and with
    `download` (a selector) the bytes of the file that clicking it downloads."""
    address = box.client.devtools(box.id, ttl_secs=600)
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(address.url)
        # The box's own browser context and tab: what its screen shows.
        page = browser.contexts[0].pages[0]
        page.goto(url)
        headings = page.locator("h1")
        heading = headings.first.text_content() if headings.count() else None
        seen: dict[str, Any] = {"title": page.title(), "heading": heading}
        if download is not None:
            with page.expect_download() as started:
                page.click(download)
            # A path in the box, where its browser wrote the file: not on this machine, so
            # `save_as` has nothing to copy; the box's files have it.
            seen["file"] = started.value.suggested_filename
            seen["contents"] = box.files.read(str(started.value.path()))
        # Only this client disconnects: the box's Chromium goes on.
        browser.close()
    return seen


def main() -> None:
    url = sys.argv[1] if len(sys.argv) > 1 else "https://example.com"
    with Box.create() as box:
        print(drive(box, url))


if __name__ == "__main__":
    main()
