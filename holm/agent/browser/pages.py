"""Tabs and pages of a screen's Chromium through its DevTools: the HTTP `/json` endpoints
for tabs, and each page's WebSocket for the rest (navigating, finding elements by meaning,
acting on them with trusted input, reading the page, screenshots, dialogs). The script that
finds elements is `page_js.py`; docs/pages.md says its rule.
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
from urllib.parse import quote, urlsplit

import msgspec

from holm.agent.browser import devtools_wire
from holm.agent.browser.cdp_session import COMMAND_TIMEOUT_S, Cdp, thrown
from holm.agent.browser.tab_watch import Landed, TabWatch
from holm.agent.motion import plan as motion_plan
from holm.errors import BadRequest, Failed, NotFound, Timeout, Transport, Unsupported
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.results import PageOpened, Tab, TabDone
from holm.wire.values import Motion

LOAD_TIMEOUT_S = 30.0
_TWO_FRAMES = {
    "expression": "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))",
    "awaitPromise": True,
}
HTTP_TIMEOUT_S = 10.0


class Pages:
    """One screen's Chromium, reached on 127.0.0.1:`port` (inside the box)."""

    def __init__(
        self,
        port: int,
        window_changes: Callable[[], int] = lambda: 0,
        pointer_landed: Landed | None = None,
    ) -> None:
        self.port = port
        # The tab listing is kept while nothing that can change it happened since: no
        # target event (tab_watch.py), no operation of ours on a tab (`_touched`), and no
        # change of the screen's windows (`window_changes`: a tab brought to the front
        # retitles Chromium's window, and DevTools lists the front tab first). The same
        # session tells the screen's input when a page took a click (`pointer_landed`).
        self._watch = TabWatch(pointer_landed)
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
            raise Transport(f"could not reach the screen's Chromium: {exc}") from None

    async def _json(self, method: str, path: str) -> Any:
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
        targets = await self._json("GET", "/json/list")
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
        pages = [t for t in await self._json("GET", "/json/list") if t.get("type") == "page"]
        if tab is None:
            if not pages:
                return dict(await self._json("PUT", "/json/new?about:blank"))
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
            async with self._session(None):
                pass

    def _follow_tabs(self) -> None:
        """Start the tab watch, or start it again when its session ended (a Chromium that
        restarted, or was not answering yet)."""
        if self._watching is None or self._watching.done():
            self._watching = asyncio.create_task(self._watch.watch(self.port))

    async def on_tab(self, tab: str, close: bool) -> TabDone:
        target = await self._target(tab)
        if close:
            await self._close_and_wait(target["id"])
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
            page = dict(await self._json("PUT", "/json/new?" + quote("about:blank", safe="")))
            await self._text(f"/json/activate/{page['id']}")
        else:
            page = await self._target(None)
        async with self._session(page) as cdp:
            loaded = await _navigate(cdp, url)
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
    async def _session(self, tab: str | dict[str, Any] | None) -> AsyncIterator[Cdp]:
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
        async with self._session(tab) as cdp:
            before = await _page(cdp, "return H.before();")
            done = await _element_op(cdp, what)
            if cdp.dialog is not None:
                return msgspec.structs.replace(
                    done, url=cdp.tab_url, dialog=str(cdp.dialog.get("message", ""))
                )
            # A fill's `change` event, and the value it left, ride on the call that reads
            # the page after it: one round trip fewer.
            fill = isinstance(what, a.FillOp)
            after = await _settled(cdp, settle_ms, _CHANGED if fill else "")
        if after is None:
            return msgspec.structs.replace(done, navigated=True)
        if fill and after["last"] is not None:
            done = msgspec.structs.replace(done, element=_element(after["last"]))
        navigated = before is None or (before["id"], before["url"]) != (after["id"], after["url"])
        return msgspec.structs.replace(
            done,
            url=after["url"],
            navigated=navigated,
            changed=[_element(c) for c in after["changed"]],
        )

    async def wheel(self, at: tuple[int, int], dx: int, dy: int, mods: int) -> bool:
        """A wheel event of `dx`/`dy` pixels on the front tab's page at the screen's point
        `at`, answered once the page has taken it; False when `at` is not on the page (on
        the toolbar, say). The page's place on the screen is its window's less the
        browser's bars above it (the window is maximised, with no frame of its own)."""
        async with self._session(None) as cdp:
            left, top, width, height = await cdp.js(_VIEWPORT)
            x, y = at[0] - left, at[1] - top
            if not (0 <= x < width and 0 <= y < height):
                return False
            wheel = {"type": "mouseWheel", "x": x, "y": y, "deltaX": dx, "deltaY": dy}
            await cdp.call("Input.dispatchMouseEvent", {**wheel, "modifiers": mods})
            return True

    async def look(self, what: a.LookWhat) -> r.Found:
        async with self._session(what.tab) as cdp:
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
        return r.Found(elements=[_element(e) for e in found["elements"]], total=found["total"])

    async def snapshot(self, what: a.SnapshotWhat) -> r.PageSnapshot:
        async with self._session(what.tab) as cdp:
            if what.quiet_ms:
                await _quiet(cdp, what.quiet_ms, a.MAX_WAIT_MS)
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
        controls = [_element(c) for c in got["controls"]]
        last = self._snapshots.get(tab)
        self._snapshots[tab] = controls
        if what.delta and last is not None:
            controls = [c for c in controls if c not in last]
        return r.PageSnapshot(
            tab=tab, url=got["url"], title=got["title"], controls=controls, cut=got["cut"]
        )

    async def read(self, what: a.ReadWhat) -> r.PageText:
        async with self._session(what.tab) as cdp:
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
        async with self._session(tab) as cdp:
            params = {
                "expression": what.expression,
                "awaitPromise": True,
                "returnByValue": True,
                "userGesture": True,
                "timeout": timeout_ms,
            }
            try:
                answer = await cdp.call("Runtime.evaluate", params, timeout_ms / 1000 + 1)
            except TimeoutError:
                raise Timeout(f"the expression ran past {timeout_ms} ms") from None
        if "exceptionDetails" in answer:
            raise Failed(f"the expression threw: {thrown(answer['exceptionDetails'])}")
        result = answer.get("result", {})
        value = result.get("value", result.get("description"))
        encoded = json.dumps(value, ensure_ascii=False)
        if len(encoded) > what.limit:
            return r.Evaluated(value=encoded[: what.limit], type=result.get("type", ""), cut=True)
        return r.Evaluated(value=value, type=result.get("type", "undefined"))

    async def page_shot(self, what: a.PageShotWhat) -> r.PageCaptured:
        async with self._session(what.tab) as cdp:
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
        return r.PageCaptured(
            tab=tab, format=what.format, width=width, height=height, data_base64=shot["data"]
        )

    async def pdf(self, what: a.PdfWhat) -> bytes:
        async with self._session(what.tab) as cdp:
            params = {"landscape": what.landscape, "printBackground": not what.no_background}
            printed = await cdp.call("Page.printToPDF", params, LOAD_TIMEOUT_S)
        return base64.b64decode(printed.get("data", ""))

    async def cookies(self, what: a.CookiesWhat) -> r.CookieList:
        async with self._session(None) as cdp:
            match what.do:
                case "get":
                    if what.url is None:
                        got = await cdp.call("Network.getAllCookies")
                    else:
                        got = await cdp.call("Network.getCookies", {"urls": [what.url]})
                    return r.CookieList(cookies=[_cookie(c) for c in got.get("cookies", [])])
                case "set":
                    sent = [_cookie_param(c, what.url) for c in what.cookies]
                    await cdp.call("Network.setCookies", {"cookies": sent})
                    return r.CookieList(changed=len(sent))
            if what.url is None:
                count = len((await cdp.call("Network.getAllCookies")).get("cookies", []))
                await cdp.call("Network.clearBrowserCookies")
                return r.CookieList(changed=count)
            found = (await cdp.call("Network.getCookies", {"urls": [what.url]})).get("cookies", [])
            for c in found:
                params = {"name": c["name"], "domain": c["domain"], "path": c.get("path", "/")}
                await cdp.call("Network.deleteCookies", params)
            return r.CookieList(changed=len(found))

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

    async def save_state(self, what: a.StateSaveWhat) -> r.BrowserState:
        if what.indexed_db:
            raise Unsupported("IndexedDB is not saved by this server")
        async with self._session(None) as cdp:
            cookies = (await cdp.call("Network.getAllCookies")).get("cookies", [])
        wanted = {o.rstrip("/") for o in what.origins}
        origins: list[dict[str, Any]] = []
        for tab in await self.tabs():
            parts = urlsplit(tab.url)
            origin = f"{parts.scheme}://{parts.netloc}"
            if parts.scheme not in ("http", "https") or (wanted and origin not in wanted):
                continue
            if any(o["origin"] == origin for o in origins):
                continue
            async with self._session(tab.tab) as cdp:
                stored = await cdp.run(
                    "const dump = s => Object.entries(s)"
                    ".map(([name, value]) => ({name, value}));"
                    "return {local: A.local ? dump(localStorage) : [],"
                    " session: A.session ? dump(sessionStorage) : []};",
                    local=not what.no_local_storage,
                    session=what.session_storage,
                )
            entry: dict[str, Any] = {"origin": origin, "localStorage": stored["local"]}
            if what.session_storage:
                entry["sessionStorage"] = stored["session"]
            origins.append(entry)
        state = {"cookies": [_playwright_cookie(c) for c in cookies], "origins": origins}
        return r.BrowserState(
            cookies=len(cookies), origins=len(origins), session_json=json.dumps(state)
        )

    async def load_state(self, session_json: str) -> r.StateLoaded:
        try:
            state = json.loads(session_json)
            cookies = [_cdp_cookie(c) for c in state.get("cookies", [])]
            origins = list(state.get("origins", []))
        except (ValueError, AttributeError, KeyError, TypeError) as exc:
            raise BadRequest(f"session_json is not a storage state: {exc}") from None
        async with self._session(None) as cdp:
            if cookies:
                await cdp.call("Network.setCookies", {"cookies": cookies})
        for entry in origins:
            origin = str(entry.get("origin", "")).rstrip("/")
            items = {**_items(entry.get("localStorage")), **_items(entry.get("sessionStorage"))}
            if not origin or not items:
                continue
            # Storage belongs to an origin: it is written from a page of that origin.
            page = dict(await self._json("PUT", "/json/new?" + quote("about:blank", safe="")))
            try:
                async with self._session(page) as cdp:
                    await _navigate(cdp, origin + "/")
                    await cdp.run(
                        "for (const [k, v] of A.local) localStorage.setItem(k, v);"
                        "for (const [k, v] of A.session) sessionStorage.setItem(k, v);"
                        "return null;",
                        local=list(_items(entry.get("localStorage")).items()),
                        session=list(_items(entry.get("sessionStorage")).items()),
                    )
            finally:
                await self._close_and_wait(page["id"])
        return r.StateLoaded(cookies=len(cookies), origins=len(origins))

    async def _close_and_wait(self, tab: str) -> None:
        """Close a tab and wait until DevTools lists it no more (a closing tab is listed a
        moment longer, and would be taken for the front one)."""
        if [t.tab for t in await self.tabs()] == [tab]:
            # Closing a window's last tab ends Chromium, and with it the screen's browser:
            # a blank tab stays in its place.
            await self._json("PUT", "/json/new?" + quote("about:blank", safe=""))
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


MAX_CHANGED = 50
POLL_S = 0.1


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


def _items(stored: object) -> dict[str, str]:
    if not isinstance(stored, list):
        return {}
    return {str(i["name"]): str(i["value"]) for i in stored if isinstance(i, dict)}


def _playwright_cookie(c: dict[str, Any]) -> dict[str, Any]:
    """A DevTools cookie as Playwright's storage state writes it."""
    return {
        "name": c["name"],
        "value": c.get("value", ""),
        "domain": c.get("domain", ""),
        "path": c.get("path", "/"),
        "expires": -1 if c.get("session") else c.get("expires", -1),
        "httpOnly": bool(c.get("httpOnly")),
        "secure": bool(c.get("secure")),
        "sameSite": c.get("sameSite", "Lax"),
    }


def _cdp_cookie(c: dict[str, Any]) -> dict[str, Any]:
    cookie = {
        "name": c["name"],
        "value": c["value"],
        "domain": c["domain"],
        "path": c.get("path", "/"),
        "httpOnly": bool(c.get("httpOnly")),
        "secure": bool(c.get("secure")),
    }
    if c.get("sameSite") in ("Strict", "Lax", "None"):
        cookie["sameSite"] = c["sameSite"]
    if isinstance(c.get("expires"), int | float) and c["expires"] > 0:
        cookie["expires"] = c["expires"]
    return cookie


def _cookie(c: dict[str, Any]) -> r.Cookie:
    expires = c.get("expires")
    return r.Cookie(
        name=c["name"],
        value=c.get("value", ""),
        domain=c.get("domain", ""),
        path=c.get("path", "/"),
        http_only=bool(c.get("httpOnly")),
        secure=bool(c.get("secure")),
        same_site=c.get("sameSite"),
        expires=None if c.get("session") or expires is None or expires < 0 else expires,
    )


def _cookie_param(c: a.CookieIn, url: str | None) -> dict[str, Any]:
    if url is None and c.domain is None:
        raise BadRequest(f"cookie {c.name!r} needs a url or a domain")
    param: dict[str, Any] = {
        "name": c.name,
        "value": c.value,
        "httpOnly": c.http_only,
        "secure": c.secure,
    }
    if url is not None and c.domain is None:
        param["url"] = url
    for key, value in (("domain", c.domain), ("path", c.path), ("sameSite", c.same_site)):
        if value is not None:
            param[key] = value
    if c.expires is not None:
        param["expires"] = c.expires
    return param


def _element(d: dict[str, Any]) -> r.Element:
    return msgspec.convert(d, r.Element)


_AFTER = """
  const last = H.last && H.last.isConnected ? H.describe(H.last) : null;
  return {...H.after(A.limit), last};
"""
_CHANGED = 'if (H.last) H.last.dispatchEvent(new Event("change", {bubbles: true}));'
_TICK = "await new Promise(r => setTimeout(r, 0));"


async def _page(cdp: Cdp, body: str, **args: object) -> dict[str, Any] | None:
    """`body`'s answer, or None while the page is between documents."""
    try:
        got = await cdp.run(body, **args)
    except (Failed, Timeout, Transport):
        return None
    return got if isinstance(got, dict) else None


# The end of a load: the load event, or the main frame's "stopped loading", which comes
# even where the load event is not sent.
_LOADED = ("Page.loadEventFired", "Page.frameStoppedLoading")
_STARTED = (
    "Page.frameRequestedNavigation",
    "Page.frameScheduledNavigation",
    "Page.frameStartedLoading",
    "Page.frameStartedNavigating",
)


async def _settled(cdp: Cdp, settle_ms: int, first: str = "") -> dict[str, Any] | None:
    """The page after an element operation (`H.after`: its document, URL and the controls
    that changed, and `last`, the element the operation found, as it is now), once what the
    operation started has begun (a navigation, a render), a navigation it started has
    loaded, and `settle_ms` have passed. `first` is JavaScript run before all that."""
    if settle_ms:
        await asyncio.sleep(settle_ms / 1000)
    state = await _page(cdp, first + _TICK + _AFTER, limit=MAX_CHANGED)
    if cdp.saw(*_STARTED):
        await cdp.until(_LOADED, LOAD_TIMEOUT_S)
        state = await _page(cdp, _AFTER, limit=MAX_CHANGED)
    return state


async def _quiet(cdp: Cdp, quiet_ms: int, within_ms: int) -> None:
    """Wait until the page's DOM stayed unchanged for `quiet_ms` (at most `within_ms`)."""
    deadline = time.monotonic() + within_ms / 1000
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        try:
            now = await cdp.run("return H.mark();")
        except (Failed, Timeout):
            now = None
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_ms / 1000:
            return
        await asyncio.sleep(POLL_S)


_FIND = """
  const els = H.find(A.q, A.exact, null, A.kind);
  if (!els.length) return null;
  const el = els[0];
  H.last = el;
  if (A.scroll) {
    const r = el.getBoundingClientRect();
    if (r.bottom < 0 || r.right < 0 || r.top > innerHeight || r.left > innerWidth)
      el.scrollIntoView({block: "center", inline: "center"});
  }
  const found = H.describe(el);
"""

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

_BUTTONS = {"left": "left", "right": "right", "middle": "middle"}


async def _find(
    cdp: Cdp,
    query: str,
    exact: bool,
    kind: str | None = None,
    scroll: bool = True,
    then: str | None = None,
) -> dict[str, Any]:
    """The element `query` names, described as it was found, and made `H.last`; with
    `then` (JavaScript using `el`), its value is in `found["then"]`, in the same call."""
    after = (
        "return found;" if then is None else f"found.then = (() => {{ {then} }})(); return found;"
    )
    found = await cdp.run(_FIND + after, q=query, exact=exact, kind=kind, scroll=scroll)
    if not isinstance(found, dict):
        raise NotFound(f"nothing on the page matches {query!r}")
    return found


def _kind(found: dict[str, Any]) -> str:
    return f"a {found.get('role') or found.get('tag')}"


def _centre(found: dict[str, Any]) -> tuple[float, float]:
    box = found["box"]
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


async def _on_last(cdp: Cdp, body: str, **args: object) -> Any:
    """Run `body` with `el`, the element the last `_find` chose."""
    return await cdp.run("const el = H.last; " + body, **args)


async def _click_at(
    cdp: Cdp,
    found: dict[str, Any],
    button: str,
    clicks: int,
    mods: int,
    motion: Motion = "instant",
    seed: int | None = None,
) -> None:
    if not found.get("visible", True):
        # An element with no box (a hidden checkbox styled by its label) takes a DOM click.
        await _on_last(cdp, "el.click(); return null;")
        return
    x, y = _centre(found)
    moves = await _move(cdp, (x, y), motion, seed)
    for count in range(1, clicks + 1):
        moves.append(cdp.mouse("mousePressed", x, y, button, count, mods))
        moves.append(cdp.mouse("mouseReleased", x, y, button, count, mods))
    await cdp.calls(moves)


Command = tuple[str, dict[str, Any]]


async def _move(
    cdp: Cdp,
    to: tuple[float, float],
    motion: Motion,
    seed: int | None,
    button: str = "none",
) -> list[Command]:
    """Move the page's pointer to `to` along `motion`'s path from where it last was (the
    same paths as the desktop's pointer, `motion.py`): the moves that pause are made here,
    and the last ones are returned, for the caller to send with what follows."""
    if motion == "instant":
        moves = [cdp.mouse("mouseMoved", *to, button)]
    else:
        metrics = await cdp.call("Page.getLayoutMetrics")
        view = metrics.get("cssLayoutViewport") or metrics.get("layoutViewport") or {}
        bounds = (int(view.get("clientWidth", 1 << 15)), int(view.get("clientHeight", 1 << 15)))
        end = (round(to[0]), round(to[1]))
        moves = []
        for step in motion_plan(cdp.pointer, end, motion, seed, bounds):
            moves.append(cdp.mouse("mouseMoved", step.x, step.y, button))
            if step.pause_ms:
                await cdp.calls(moves)
                moves = []
                await asyncio.sleep(step.pause_ms / 1000)
    cdp.pointer = (round(to[0]), round(to[1]))
    return moves


_EDIT = """
  el.focus();
  if (el.isContentEditable) {
    const range = document.createRange();
    range.selectNodeContents(el);
    const sel = getSelection(); sel.removeAllRanges(); sel.addRange(range);
    document.execCommand("delete");
    return true;
  }
  if (!("value" in el) || el.tagName === "SELECT" || el.tagName === "BUTTON") return false;
  const proto = el.tagName === "TEXTAREA" ?
    HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  Object.getOwnPropertyDescriptor(proto, "value").set.call(el, "");
  el.dispatchEvent(new Event("input", {bubbles: true}));
  return true;
"""

_CHOOSE = """
  if (el.tagName !== "SELECT") return {error: "not a select"};
  const wanted = A.options.map(o => o.trim().toLowerCase());
  const opts = Array.from(el.options);
  const missing = wanted.filter(w => !opts.some(o =>
    o.label.trim().toLowerCase() === w || o.value.toLowerCase() === w));
  if (missing.length) return {missing};
  for (const o of opts) {
    const hit = wanted.includes(o.label.trim().toLowerCase()) ||
      wanted.includes(o.value.toLowerCase());
    if (A.drop) { if (hit) o.selected = false; }
    else if (el.multiple) { if (hit) o.selected = true; }
    else if (hit) { o.selected = true; }
  }
  el.dispatchEvent(new Event("input", {bubbles: true}));
  el.dispatchEvent(new Event("change", {bubbles: true}));
  return {chosen: Array.from(el.selectedOptions).map(o => o.label.trim())};
"""

_WAIT = """
  if (A.load && document.readyState !== "complete") return {met: false};
  for (const q of A.queries) {
    const els = H.find(q, A.exact, null, null).filter(e => H.visible(e) &&
      (!A.enabled || !(e.disabled || e.getAttribute("aria-disabled") === "true")));
    if (A.gone ? els.length === 0 : els.length > 0)
      return {met: true, query: q, element: A.gone ? null : H.describe(els[0])};
  }
  if (!A.queries.length) return {met: true, query: null, element: null};
  return {met: false};
"""


async def _element_op(cdp: Cdp, what: a.ElementOp) -> r.ElementDone:
    op = a.op_of(what)
    found: Any
    match what:
        case a.ClickOp(query=query, exact=exact, button=button, double=double, new_tab=new):
            found = await _find(cdp, query, exact)
            clicks, mods = 2 if double else 1, 2 if new else 0
            await _click_at(cdp, found, _BUTTONS[button], clicks, mods, what.motion, what.seed)
        case a.HoverOp(query=query, exact=exact, motion=motion, seed=seed):
            found = await _find(cdp, query, exact)
            await cdp.calls(await _move(cdp, _centre(found), motion, seed))
        case a.DragOp(from_=start, to=end, exact=exact, button=button, motion=motion, seed=seed):
            target = await _find(cdp, end, exact)
            found = await _find(cdp, start, exact)
            (x0, y0), (x1, y1) = _centre(found), _centre(target)
            moves = await _move(cdp, (x0, y0), motion, seed)
            moves.append(cdp.mouse("mousePressed", x0, y0, button, 1))
            if motion == "instant":
                # Steps between the ends, as a drag and drop of the page waits for moves.
                for step in range(1, 10):
                    t = step / 10
                    moves.append(
                        cdp.mouse("mouseMoved", x0 + (x1 - x0) * t, y0 + (y1 - y0) * t, button)
                    )
            await cdp.calls(moves)
            moves = await _move(cdp, (x1, y1), motion, seed, button)
            moves.append(cdp.mouse("mouseReleased", x1, y1, button, 1))
            await cdp.calls(moves)
        case a.FocusOp(query=query, exact=exact):
            found = await _find(cdp, query, exact)
            await _on_last(cdp, "el.focus(); return null;")
        case a.FillOp(query=query, exact=exact, text=text):
            found = await _find(cdp, query, exact, "editable", then=_EDIT)
            if not found["then"]:
                raise BadRequest(
                    f"{query!r} is a {found['role'] or found['tag']}, not a text field"
                )
            if text:
                await cdp.call("Input.insertText", {"text": text})
            # The `change` event and the field's new value: see `on_page`.
        case a.CheckOp(query=query, exact=exact, on=on):
            found = await _find(cdp, query, exact, "checkable")
            if found.get("checked") is None:
                raise BadRequest(f"{query!r} is {_kind(found)}, not a checkbox")
            if found["checked"] != on:
                await _click_at(cdp, found, "left", 1, 0)
                found = await _on_last(cdp, "return H.describe(el);")
        case a.OptionsOp(query=query, exact=exact):
            found = await _find(cdp, query, exact, "select")
            labels = await _on_last(
                cdp,
                'return el.tagName === "SELECT" ? '
                "Array.from(el.options).map(o => o.label.trim()) : null;",
            )
            if labels is None:
                raise BadRequest(f"{query!r} is {_kind(found)}, not a select")
            return r.ElementDone(op=op, url="", element=_element(found), options=labels)
        case a.ChooseOp(query=query, exact=exact, options=options, drop=drop):
            found = await _find(cdp, query, exact, "select")
            got = await _on_last(cdp, _CHOOSE, options=options, drop=drop)
            if "error" in got:
                raise BadRequest(f"{query!r} is {_kind(found)}, not a select")
            if "missing" in got:
                raise NotFound(f"{query!r} has no option {', '.join(got['missing'])}")
            found = await _on_last(cdp, "return H.describe(el);")
            return r.ElementDone(op=op, url="", element=_element(found), options=got["chosen"])
        case a.UploadOp(query=query, exact=exact, paths=paths):
            found = await _find(cdp, query, exact, "file")
            if found["tag"] != "input":
                raise BadRequest(
                    f"{query!r} is a {found['role'] or found['tag']}, not a file input"
                )
            handle = await cdp.call("Runtime.evaluate", {"expression": "window.__holm.last"})
            object_id = handle.get("result", {}).get("objectId")
            await cdp.call("DOM.setFileInputFiles", {"files": paths, "objectId": object_id})
        case a.HighlightOp(query=query, exact=exact, ms=ms):
            found = await _find(cdp, query, exact)
            await _on_last(
                cdp,
                "const was = el.style.outline; el.style.outline = '3px solid #e11';"
                "setTimeout(() => { el.style.outline = was; }, A.ms); return null;",
                ms=ms,
            )
        case a.WaitForOp():
            return await _wait_for(cdp, what)
        case a.HistoryOp(go=go):
            if go == "reload":
                await cdp.call("Page.reload")
            else:
                await cdp.js(f"history.{go}(), null")
            return r.ElementDone(op=op, url="")
        case a.ScrollOp(query=query, exact=exact, to=to, dx=dx, dy=dy):
            scrolled = "document.scrollingElement || document.documentElement"
            found = None
            if query is not None:
                found = await _find(cdp, query, exact, scroll=to is None)
                scrolled = "H.last"
            if to is not None or query is None:
                await cdp.run(
                    f"const el = {scrolled}; const where = A.to || 'by';"
                    "if (where === 'top') el.scrollTo(el.scrollLeft, 0);"
                    "else if (where === 'bottom') el.scrollTo(el.scrollLeft, el.scrollHeight);"
                    "else el.scrollBy(A.dx, A.dy); return null;",
                    to=to,
                    dx=dx,
                    dy=dy,
                )
            if found is None:
                return r.ElementDone(op=op, url="")
        case _:
            raise BadRequest(f"unknown element operation {op!r}")
    return r.ElementDone(op=op, url="", element=_element(found))


async def _wait_for(cdp: Cdp, what: a.WaitForOp) -> r.ElementDone:
    queries = ([] if what.query is None else [what.query]) + list(what.or_)
    deadline = time.monotonic() + what.within_ms / 1000
    args = dict(queries=queries, exact=what.exact, gone=what.gone, enabled=what.enabled)
    got: dict[str, Any]
    while True:
        try:
            got = await cdp.run(_WAIT, load=what.load, **args)
            if got.get("met") and what.until is not None:
                met = await cdp.js(f"Promise.resolve(({what.until})).then(v => !!v)")
                got["met"] = bool(met)
        except (Failed, Timeout):
            # Between two documents (a navigation under way): not there yet.
            got = {"met": False}
        if got.get("met"):
            break
        if time.monotonic() > deadline:
            named = " or ".join(repr(q) for q in queries) or "the page"
            state = "to go" if what.gone else "to appear"
            raise Timeout(f"waited {what.within_ms} ms for {named} {state}")
        await asyncio.sleep(POLL_S)
    if what.quiet_ms:
        await _quiet(cdp, what.quiet_ms, a.MAX_WAIT_MS)
    element = got.get("element")
    return r.ElementDone(
        op="wait_for",
        url="",
        element=None if element is None else _element(element),
        matched=got.get("query"),
    )


async def _navigate(cdp: Cdp, url: str) -> bool:
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
    loaded = await cdp.until(_LOADED, LOAD_TIMEOUT_S)
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
