"""Tabs and pages of a screen's Chromium through its DevTools: the HTTP `/json` endpoints
for tabs, and each page's WebSocket for the rest (navigating, reading the page,
screenshots, the console, dialogs). What acts on elements by meaning is `elements.py`, a
browser's cookies and storage `browser_state.py`; the script that finds elements is
`page_js.py`; docs/pages.md says their rules.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import html
import itertools
import json
import struct
import time
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import quote

import msgspec

from holm.agent.browser import devtools_wire
from holm.agent.browser.cdp_session import COMMAND_TIMEOUT_S, Cdp, thrown
from holm.agent.browser.elements import (
    CHANGED,
    LOAD_TIMEOUT_S,
    LOADED,
    POLL_S,
    element_op,
    page_state,
    quiet,
    settled,
    to_element,
)
from holm.agent.browser.tab_watch import KeyLanded, Landed, TabWatch
from holm.errors import BadRequest, Failed, NotFound, Timeout, Transport
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.results import PageOpened, Tab, TabDone

_TWO_FRAMES = {
    "expression": "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))",
    "awaitPromise": True,
}
HTTP_TIMEOUT_S = 10.0


class BrowserClosing(Transport):
    """The screen's Chromium did not answer, or lists no tab: it is closing its last
    window, and will end (and be started again, supervisor.py). Nothing was done yet: the
    operation may be done again on the browser that comes back."""


class Pages:
    """One screen's Chromium, reached on 127.0.0.1:`port` (inside the box)."""

    def __init__(
        self,
        port: int,
        window_changes: Callable[[], int] = lambda: 0,
        pointer_landed: Landed | None = None,
        key_landed: KeyLanded | None = None,
        pointer_released: Landed | None = None,
    ) -> None:
        self.port = port
        # The tab listing is kept while nothing that can change it happened since: no
        # target event (tab_watch.py), no operation of ours on a tab (`_touched`), and no
        # change of the screen's windows (`window_changes`: a tab brought to the front
        # retitles Chromium's window, and DevTools lists the front tab first). The same
        # session tells the screen's input when a page took a click (`pointer_landed`), a
        # key (`key_landed`) or a release (`pointer_released`).
        self._watch = TabWatch(pointer_landed, key_landed, pointer_released)
        self._watching: asyncio.Task[None] | None = None
        self._touched = 0
        self._window_changes = window_changes
        self._listed: tuple[tuple[int, int, int], list[Tab]] | None = None
        self._ids = itertools.count(1)
        # Labels given by `open_url`, to tab IDs.
        self._labels: dict[str, str] = {}
        # The controls of each tab's last snapshot, for `delta`.
        self._snapshots: dict[str, list[r.Element]] = {}
        # A DevTools session per tab, opened on first use and kept: opening one costs more
        # than most operations.
        self._pages: dict[str, Cdp] = {}
        self._opening = asyncio.Lock()

    def _touch(self) -> None:
        """Something of ours may change the tabs: the next listing is a fresh one."""
        self._touched += 1

    async def _request(self, method: str, path: str) -> tuple[int, bytes]:
        if method != "GET":
            self._touch()
        try:
            return await devtools_wire.request(self.port, method, path, HTTP_TIMEOUT_S)
        except devtools_wire.Unreachable as exc:
            raise BrowserClosing(f"could not reach the screen's Chromium: {exc}") from None

    async def devtools_json(self, method: str, path: str) -> Any:
        status, body = await self._request(method, path)
        if status == 404:
            raise NotFound(f"DevTools has no {path}")
        if status >= 400:
            raise Failed(f"DevTools answered {status} to {path}: {body.decode(errors='replace')}")
        return json.loads(body)

    async def tabs(self) -> list[Tab]:
        """The tabs, front first: the last listing when nothing changed since."""
        self._follow_tabs()
        caught_up = await self._watch.caught_up()
        kept, key = self._listed, self._listing_key()
        if caught_up and self._watch.live and kept is not None and kept[0] == key:
            return kept[1]
        listed = await self._list_tabs()
        self._listed = (key, listed) if self._watch.live else None
        return listed

    def known_tabs(self) -> list[Tab] | None:
        """The last listing when nothing changed since and the tab watch has read all that
        Chromium sent, known without waiting; None when `tabs` must look further."""
        listed = self._listed
        if listed is None or not self._watch.live or not self._watch.read_all():
            return None
        return listed[1] if listed[0] == self._listing_key() else None

    def _listing_key(self) -> tuple[int, int, int]:
        """What a listing is good for: the tab watch's count of changes, ours, the window
        watch's."""
        return (self._watch.changes, self._touched, self._window_changes())

    async def _list_tabs(self) -> list[Tab]:
        targets = await self.devtools_json("GET", "/json/list")
        # DevTools' /json escapes titles as HTML (`->` comes as `-&gt;`).
        names = {tab: label for label, tab in self._labels.items()}
        return [
            Tab(
                tab=t["id"],
                title=html.unescape(t.get("title", "")),
                url=t.get("url", ""),
                label=names.get(t["id"]),
            )
            for t in targets
            if t.get("type") == "page"
        ]

    async def _target(self, tab: str | None) -> dict[str, Any]:
        pages = [
            t for t in await self.devtools_json("GET", "/json/list") if t.get("type") == "page"
        ]
        if tab is None:
            if not pages:
                raise BrowserClosing("the screen's Chromium lists no tab")
            # DevTools lists the most recently active page first.
            return dict(pages[0])
        wanted = self._labels.get(tab, tab)
        for t in pages:
            if t["id"] == wanted:
                return dict(t)
        raise NotFound(f"no tab {tab}")

    async def warm(self) -> None:
        """Open the front tab's session before any operation needs it (at bring-up), so the
        first one does not pay for it; a failure is the first operation's to report.
        The tab watch starts here too."""
        self._follow_tabs()
        with contextlib.suppress(Failed, Transport, Timeout, NotFound):
            async with self.session(None):
                pass

    async def follow(self, port: int) -> None:
        """The screen's Chromium started again, on `port` (supervisor.py): nothing of the
        one that ended holds, not its sessions, tabs, labels nor snapshots."""
        self.port = port
        if self._watching is not None:
            self._watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watching
            self._watching = None
        sessions, self._pages = list(self._pages.values()), {}
        for cdp in sessions:
            with contextlib.suppress(Exception):
                await cdp.close()
        self._labels.clear()
        self._snapshots.clear()
        self._listed = None
        self._touch()

    def _follow_tabs(self) -> None:
        """Start the tab watch, or start it again when its session ended (a Chromium that
        restarted, or was not answering yet)."""
        if self._watching is None or self._watching.done():
            self._watching = asyncio.create_task(self._watch.watch(self.port))

    async def on_tab(self, tab: str, close: bool) -> TabDone:
        target = await self._target(tab)
        if close:
            await self.close_and_wait(target["id"])
            await self.forget(target["id"])
        else:
            await self._text(f"/json/activate/{target['id']}")
        return TabDone(tab=target["id"], closed=close)

    async def _text(self, path: str) -> str:
        self._touch()
        status, body = await self._request("GET", path)
        if status >= 400:
            raise NotFound(f"DevTools answered {status} to {path}")
        return body.decode(errors="replace")

    async def open_url(self, url: str, target: str, label: str | None = None) -> PageOpened:
        if not url:
            raise BadRequest("url is empty")
        if target == "blank":
            page = dict(
                await self.devtools_json("PUT", "/json/new?" + quote("about:blank", safe=""))
            )
            await self._text(f"/json/activate/{page['id']}")
        else:
            page = await self._target(None)
        async with self.session(page) as cdp:
            loaded = await navigate(cdp, url)
        if label is not None:
            self._labels[label] = page["id"]
            self._touch()
        final = next((t for t in await self.tabs() if t.tab == page["id"]), None)
        return PageOpened(
            tab=page["id"],
            url=final.url if final else url,
            title=final.title if final else "",
            loaded=loaded,
            label=label,
        )

    # Page content, through the page's WebSocket.

    @contextlib.asynccontextmanager
    async def session(self, tab: str | dict[str, Any] | None) -> AsyncIterator[Cdp]:
        """The kept session of a tab (an ID or a label; None: the front one) or of a
        DevTools target, for one operation at a time."""
        target = tab if isinstance(tab, dict) else await self._target(tab)
        # An operation on a page may navigate it.
        self._touch()
        async with self._opening:
            cdp = self._pages.get(target["id"])
            if cdp is None or cdp.closed:
                cdp = await Cdp.open(target["webSocketDebuggerUrl"], self._ids, target["id"])
                self._pages[target["id"]] = cdp
        async with cdp.lock:
            cdp.begin()
            cdp.tab_url = target.get("url", "")
            try:
                yield cdp
            finally:
                self._touch()

    @contextlib.asynccontextmanager
    async def _fresh_session(self, tab: str | None) -> AsyncIterator[Cdp]:
        """A session of its own, closed after: for what a new session is told (the console
        log so far) and a kept one is not."""
        target = await self._target(tab)
        cdp = await Cdp.open(target["webSocketDebuggerUrl"], self._ids, target["id"])
        try:
            yield cdp
        finally:
            await cdp.close()

    async def on_page(self, what: a.ElementOp, tab: str | None, settle_ms: int) -> r.ElementDone:
        async with self.session(tab) as cdp:
            before = await page_state(cdp, "return H.before();")
            done = await element_op(cdp, what)
            if cdp.dialog is not None:
                return msgspec.structs.replace(
                    done, url=cdp.tab_url, dialog=str(cdp.dialog.get("message", ""))
                )
            # A fill's `change` event, and the value it left, ride on the call that reads
            # the page after it: one round trip fewer.
            fill = what if isinstance(what, a.FillOp) else None
            after = await settled(cdp, settle_ms, CHANGED if fill else "")
        if after is None:
            return msgspec.structs.replace(done, navigated=True)
        if fill is not None and after["last"] is not None:
            done = msgspec.structs.replace(done, element=to_element(after["last"]))
            # A step that did nothing never answers ok.
            if fill.text and after["last"].get("value") == "":
                raise Failed(f"{fill.query!r} took none of the text: it is still empty")
        navigated = before is None or (before["id"], before["url"]) != (after["id"], after["url"])
        return msgspec.structs.replace(
            done,
            url=after["url"],
            navigated=navigated,
            changed=[to_element(c) for c in after["changed"]],
        )

    async def wheel(self, at: tuple[int, int], dx: int, dy: int, mods: int) -> bool:
        """A wheel event of `dx`/`dy` pixels on the front tab's page at the screen's point
        `at`, answered once the page has taken it; False when `at` is not on the page (on
        the toolbar, say). The page's place on the screen is its window's less the
        browser's bars above it (the window is maximised, with no frame of its own)."""
        async with self.session(None) as cdp:
            left, top, width, height = await cdp.js(_VIEWPORT)
            x, y = at[0] - left, at[1] - top
            if not (0 <= x < width and 0 <= y < height):
                return False
            wheel = {"type": "mouseWheel", "x": x, "y": y, "deltaX": dx, "deltaY": dy}
            await cdp.call("Input.dispatchMouseEvent", {**wheel, "modifiers": mods})
            return True

    async def look(self, what: a.LookWhat) -> r.Found:
        async with self.session(what.tab) as cdp:
            body = """
              const els = H.find(A.q, A.exact, A.role, null);
              if (A.scroll && els.length) els[0].scrollIntoView({block: "center"});
              return {total: els.length, elements: els.slice(0, A.limit).map(H.describe)};
            """
            found = await cdp.run(
                body,
                q=what.query,
                exact=what.exact,
                role=what.role,
                limit=what.limit,
                scroll=what.scroll,
            )
        return r.Found(elements=[to_element(e) for e in found["elements"]], total=found["total"])

    async def snapshot(self, what: a.SnapshotWhat) -> r.PageSnapshot:
        async with self.session(what.tab) as cdp:
            if what.quiet_ms:
                await quiet(cdp, what.quiet_ms, a.MAX_WAIT_MS)
            body = """
              let scope = null;
              if (A.scope !== null) {
                scope = H.find(A.scope, false, null, null)[0];
                if (!scope) return {missing: true};
              }
              const c = H.controls(scope, A.limit);
              return {controls: c.controls, cut: c.cut, url: location.href, title: document.title};
            """
            got = await cdp.run(body, scope=what.scope, limit=what.limit)
            tab = cdp.tab
        if got.get("missing"):
            raise NotFound(f"nothing on the page matches the scope {what.scope!r}")
        controls = [to_element(c) for c in got["controls"]]
        last = self._snapshots.get(tab)
        self._snapshots[tab] = controls
        if what.delta and last is not None:
            controls = [c for c in controls if c not in last]
        return r.PageSnapshot(
            tab=tab, url=got["url"], title=got["title"], controls=controls, cut=got["cut"]
        )

    async def read(self, what: a.ReadWhat) -> r.PageText:
        async with self.session(what.tab) as cdp:
            # Cut in the page: only what is asked for crosses DevTools.
            body = """
              const got = H.read(A.format, A.max_links);
              return {links: got.links, text: got.text.slice(0, A.limit),
                cut: got.text.length > A.limit, url: location.href, title: document.title};
            """
            args = dict(format=what.format, max_links=what.max_links, limit=what.limit)
            got = await cdp.run(body, **args)
            tab = cdp.tab
        return r.PageText(
            tab=tab,
            url=got["url"],
            title=got["title"],
            format=what.format,
            text=got["text"],
            links=[r.Link(text=link["text"], url=link["url"]) for link in got["links"]],
            cut=got["cut"],
        )

    async def evaluate(self, what: a.EvaluateWhat, tab: str | None) -> r.Evaluated:
        timeout_ms = min(what.timeout_ms, a.MAX_WAIT_MS)
        async with self.session(tab) as cdp:
            params = {
                "expression": what.expression,
                "awaitPromise": True,
                "returnByValue": True,
                "userGesture": True,
                "timeout": timeout_ms,
            }
            try:
                answer = await cdp.call("Runtime.evaluate", params, timeout_ms / 1000 + 1)
            except Timeout:
                # Capped, not refused (docs/api.md): the message says which wait ran out.
                raise Timeout(f"the expression ran past {timeout_ms} ms") from None
        if "exceptionDetails" in answer:
            raise Failed(f"the expression threw: {thrown(answer['exceptionDetails'])}")
        result = answer.get("result", {})
        value = result.get("value", result.get("description"))
        encoded = json.dumps(value, ensure_ascii=False)
        if len(encoded) > what.limit:
            return r.Evaluated(value=encoded[: what.limit], type=result.get("type", ""), cut=True)
        return r.Evaluated(value=value, type=result.get("type", "undefined"))

    async def page_shot(self, what: a.PageShotWhat) -> r.PageShotTaken:
        async with self.session(what.tab) as cdp:
            if what.annotate:
                await cdp.run(_ANNOTATE, on=True)
            params: dict[str, Any] = {"format": what.format}
            if what.format == "jpeg":
                params["quality"] = what.quality
            if what.full:
                metrics = await cdp.call("Page.getLayoutMetrics")
                size = metrics.get("cssContentSize") or metrics.get("contentSize") or {}
                params["captureBeyondViewport"] = True
                params["clip"] = {
                    "x": 0,
                    "y": 0,
                    "width": size.get("width", 0),
                    "height": size.get("height", 0),
                    "scale": 1,
                }
            try:
                shot = await cdp.call("Page.captureScreenshot", params, LOAD_TIMEOUT_S)
            finally:
                if what.annotate:
                    await cdp.run(_ANNOTATE, on=False)
            tab = cdp.tab
        data = base64.b64decode(shot.get("data", ""))
        width, height = _image_size(data)
        return r.PageShotTaken(
            tab=tab, format=what.format, width=width, height=height, data_base64=shot["data"]
        )

    async def pdf(self, what: a.PdfWhat) -> bytes:
        async with self.session(what.tab) as cdp:
            params = {"landscape": what.landscape, "printBackground": not what.no_background}
            printed = await cdp.call("Page.printToPDF", params, LOAD_TIMEOUT_S)
        return base64.b64decode(printed.get("data", ""))

    async def console(self, what: a.ConsoleWhat) -> r.ConsoleLog:
        async with self._fresh_session(what.tab) as cdp:
            # Enabling Runtime makes the page say again what it logged so far.
            await cdp.call("Runtime.enable")
            await cdp.call("Runtime.evaluate", {"expression": "0"})
            if what.clear:
                await cdp.call("Runtime.discardConsoleEntries")
        messages = [m for e in cdp.events if (m := _console_message(e)) is not None]
        if what.errors:
            messages = [m for m in messages if m.level in ("error", "exception")]
        return r.ConsoleLog(messages=messages[-what.limit :], cut=len(messages) > what.limit)

    async def close_and_wait(self, tab: str) -> None:
        """Close a tab and wait until DevTools lists it no more (a closing tab is listed a
        moment longer, and would be taken for the front one)."""
        if [t.tab for t in await self.tabs()] == [tab]:
            # Closing a window's last tab ends Chromium, and with it the screen's browser:
            # a blank tab stays in its place.
            await self.devtools_json("PUT", "/json/new?" + quote("about:blank", safe=""))
        await self._text(f"/json/close/{tab}")
        deadline = time.monotonic() + COMMAND_TIMEOUT_S
        while time.monotonic() < deadline:
            if all(t.tab != tab for t in await self.tabs()):
                return
            await asyncio.sleep(POLL_S)

    async def capture(self, tab: str) -> r.Captured:
        shot = await self.page_shot(a.PageShotWhat(tab=tab))
        data = base64.b64decode(shot.data_base64)
        return r.Captured(
            hash="pg:" + hashlib.sha256(data).hexdigest()[:32],
            width=shot.width,
            height=shot.height,
            unchanged=False,
            png_base64=shot.data_base64,
        )

    async def dialog(self, accept: bool, text: str | None) -> r.DialogDone:
        cdp = next((c for c in self._pages.values() if c.dialog and not c.closed), None)
        if cdp is None:
            raise NotFound("no dialog is open on the page")
        # Only a session that saw the dialog open can answer it: the tab's kept one.
        opening, cdp.dialog = cdp.dialog or {}, None
        params: dict[str, Any] = {"accept": accept}
        if text is not None:
            params["promptText"] = text
        try:
            await cdp.call("Page.handleJavaScriptDialog", params)
        except (Failed, Transport, Timeout):
            raise NotFound("no dialog is open on the page") from None
        return r.DialogDone(
            accepted=accept, kind=opening.get("type", ""), message=opening.get("message", "")
        )

    async def forget(self, tab: str) -> None:
        self._labels = {label: t for label, t in self._labels.items() if t != tab}
        self._touch()
        self._snapshots.pop(tab, None)
        cdp = self._pages.pop(tab, None)
        if cdp is not None:
            await cdp.close()

    async def close(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watching
        await asyncio.gather(*(self.forget(tab) for tab in list(self._pages)))


# Where a tab's page is on the screen, and its size.
_VIEWPORT = "[screenX, screenY + outerHeight - innerHeight, innerWidth, innerHeight]"


def _console_message(event: dict[str, Any]) -> r.ConsoleMessage | None:
    params = event.get("params", {})
    if event["method"] == "Runtime.consoleAPICalled":
        parts = [
            str(arg.get("value", arg.get("description", arg.get("type", ""))))
            for arg in params.get("args", [])
        ]
        frames = params.get("stackTrace", {}).get("callFrames") or [{}]
        return r.ConsoleMessage(
            level=str(params.get("type", "log")),
            text=" ".join(parts),
            at_ms=int(params.get("timestamp", 0)),
            url=frames[0].get("url") or None,
        )
    if event["method"] == "Runtime.exceptionThrown":
        details = params.get("exceptionDetails", {})
        return r.ConsoleMessage(
            level="exception",
            text=thrown(details),
            at_ms=int(params.get("timestamp", 0)),
            url=details.get("url") or None,
        )
    return None


_ANNOTATE = """
  const old = document.getElementById("__holm_annotate");
  if (old) old.remove();
  if (!A.on) return null;
  const layer = document.createElement("div");
  layer.id = "__holm_annotate";
  layer.style.cssText = "position:fixed;inset:0;pointer-events:none;z-index:2147483647";
  H.controls(null, 200).controls.forEach((c, i) => {
    const b = document.createElement("div");
    b.style.cssText = `position:fixed;left:${c.box.x}px;top:${c.box.y}px;width:${c.box.width}px;` +
      `height:${c.box.height}px;outline:2px solid #e11;font:11px sans-serif;color:#fff`;
    const n = document.createElement("span");
    n.textContent = String(i + 1);
    n.style.cssText = "background:#e11;padding:0 2px;position:absolute;left:0;top:-13px";
    b.appendChild(n);
    layer.appendChild(b);
  });
  document.documentElement.appendChild(layer);
  return null;
"""


async def navigate(cdp: Cdp, url: str) -> bool:
    """Navigate and wait for the load event; False when it did not come in time."""
    try:
        result = await cdp.call("Page.navigate", {"url": url})
    except Failed as exc:
        raise BadRequest(
            f"could not open {url}: {str(exc).removeprefix('Page.navigate: ')}"
        ) from None
    if result.get("errorText"):
        raise Failed(f"could not open {url}: {result['errorText']}")
    if not result.get("loaderId"):
        # A same-document navigation (a #fragment) has no load to wait for.
        return True
    loaded = await cdp.until(LOADED, LOAD_TIMEOUT_S)
    with contextlib.suppress(Failed, Timeout):
        if loaded:
            # Until the new page has drawn a frame, Chromium keeps showing the old one
            # ("paint holding") and drops input meant for the new one.
            await cdp.call("Runtime.evaluate", _TWO_FRAMES)
        # A page opened through DevTools does not take the keyboard from the location bar
        # (where a new window starts); a user's next keys are meant for the page.
        await cdp.call("Page.bringToFront")
    return loaded


def _image_size(data: bytes) -> tuple[int, int]:
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    # JPEG: the size is in the first start-of-frame marker.
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            break
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2 : i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return int(width), int(height)
        i += 2 + length
    return 0, 0
