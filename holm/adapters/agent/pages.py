"""Tabs of a screen's Chromium through its DevTools: the HTTP `/json` endpoints and the
page's WebSocket (`Page.navigate`). Reading and acting on page content comes with
Playwright later; those actions are `Unsupported` here.
"""

from __future__ import annotations

import asyncio
import html
import itertools
from typing import Any
from urllib.parse import quote

import aiohttp

from holm.errors import BadRequest, Failed, NotFound, Transport
from holm.wire.results import PageOpened, Tab, TabDone

LOAD_TIMEOUT_S = 30.0
COMMAND_TIMEOUT_S = 5.0
_TWO_FRAMES = {
    "expression": "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))",
    "awaitPromise": True,
}
HTTP_TIMEOUT = aiohttp.ClientTimeout(total=10)


class Pages:
    """One screen's Chromium, reached on 127.0.0.1:`port` (inside the box)."""

    def __init__(self, session: aiohttp.ClientSession, port: int) -> None:
        self.session = session
        self.base = f"http://127.0.0.1:{port}"
        self._ids = itertools.count(1)

    async def _json(self, method: str, path: str) -> Any:
        try:
            async with self.session.request(method, self.base + path, timeout=HTTP_TIMEOUT) as r:
                if r.status == 404:
                    raise NotFound(f"DevTools has no {path}")
                if r.status >= 400:
                    raise Failed(f"DevTools answered {r.status} to {path}: {await r.text()}")
                return await r.json(content_type=None)
        except aiohttp.ClientError as exc:
            raise Transport(f"could not reach the screen's Chromium: {exc}") from None

    async def tabs(self) -> list[Tab]:
        targets = await self._json("GET", "/json/list")
        # DevTools' /json escapes titles as HTML (`->` comes as `-&gt;`).
        return [
            Tab(tab=t["id"], title=html.unescape(t.get("title", "")), url=t.get("url", ""))
            for t in targets
            if t.get("type") == "page"
        ]

    async def _target(self, tab: str | None) -> dict[str, Any]:
        pages = [t for t in await self._json("GET", "/json/list") if t.get("type") == "page"]
        if tab is None:
            if not pages:
                return dict(await self._json("PUT", "/json/new?about:blank"))
            # DevTools lists the most recently active page first.
            return dict(pages[0])
        for t in pages:
            if t["id"] == tab:
                return dict(t)
        raise NotFound(f"no tab {tab}")

    async def on_tab(self, tab: str, close: bool) -> TabDone:
        target = await self._target(tab)
        if close:
            await self._text(f"/json/close/{target['id']}")
        else:
            await self._text(f"/json/activate/{target['id']}")
        return TabDone(tab=target["id"], closed=close)

    async def _text(self, path: str) -> str:
        try:
            async with self.session.get(self.base + path, timeout=HTTP_TIMEOUT) as r:
                if r.status >= 400:
                    raise NotFound(f"DevTools answered {r.status} to {path}")
                return await r.text()
        except aiohttp.ClientError as exc:
            raise Transport(f"could not reach the screen's Chromium: {exc}") from None

    async def open_url(self, url: str, target: str) -> PageOpened:
        if not url:
            raise BadRequest("url is empty")
        if target == "blank":
            page = dict(await self._json("PUT", "/json/new?" + quote("about:blank", safe="")))
            await self._text(f"/json/activate/{page['id']}")
        else:
            page = await self._target(None)
        loaded = await self._navigate(page["webSocketDebuggerUrl"], url)
        final = next((t for t in await self.tabs() if t.tab == page["id"]), None)
        return PageOpened(
            tab=page["id"],
            url=final.url if final else url,
            title=final.title if final else "",
            loaded=loaded,
        )

    async def _navigate(self, ws_url: str, url: str) -> bool:
        """Navigate and wait for the load event; False when it did not come in time."""
        try:
            async with self.session.ws_connect(ws_url, max_msg_size=0) as ws:
                await self._command(ws, "Page.enable", {})
                nav_id = next(self._ids)
                await ws.send_json(
                    {"id": nav_id, "method": "Page.navigate", "params": {"url": url}}
                )
                try:
                    async with asyncio.timeout(LOAD_TIMEOUT_S):
                        loaded = await self._await_load(ws, nav_id, url)
                except TimeoutError:
                    loaded = False
                if loaded:
                    # Until the new page has drawn a frame, Chromium keeps showing the old
                    # one ("paint holding") and drops input meant for the new one.
                    await self._command(ws, "Runtime.evaluate", _TWO_FRAMES)
                # A page opened through DevTools does not take the keyboard from the
                # location bar (where a new window starts); a user's next keys are meant
                # for the page.
                await self._command(ws, "Page.bringToFront", {})
                return loaded
        except aiohttp.ClientError as exc:
            raise Transport(f"could not reach the page: {exc}") from None

    async def _command(
        self, ws: aiohttp.ClientWebSocketResponse, method: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        """Send one command and wait (briefly) for its answer, skipping events."""
        command_id = next(self._ids)
        await ws.send_json({"id": command_id, "method": method, "params": params})
        try:
            async with asyncio.timeout(COMMAND_TIMEOUT_S):
                async for message in ws:
                    if message.type != aiohttp.WSMsgType.TEXT:
                        break
                    data = message.json()
                    if data.get("id") == command_id:
                        return dict(data)
        except TimeoutError:
            pass
        return {}

    async def _await_load(self, ws: aiohttp.ClientWebSocketResponse, nav_id: int, url: str) -> bool:
        # The end of the load (the load event, or the main frame's "stopped loading", which
        # comes even where the load event is not sent) can come before the answer to
        # Page.navigate: both are awaited in any order.
        frame: str | None = None
        loaded = False
        stopped: set[str] = set()
        async for message in ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            data = message.json()
            if data.get("id") == nav_id:
                result = data.get("result", {})
                if "error" in data:
                    raise BadRequest(f"could not open {url}: {data['error'].get('message')}")
                if result.get("errorText"):
                    raise Failed(f"could not open {url}: {result['errorText']}")
                if not result.get("loaderId"):
                    # A same-document navigation (a #fragment) has no load to wait for.
                    return True
                frame = result.get("frameId")
            elif data.get("method") == "Page.loadEventFired":
                loaded = True
            elif data.get("method") == "Page.frameStoppedLoading":
                stopped.add(data.get("params", {}).get("frameId", ""))
            if frame is not None and (loaded or frame in stopped):
                return True
        return False
