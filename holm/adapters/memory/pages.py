"""The pages of a memory box: a small model of a browser, one `case` per page action, as
the agent's browser wing does them for real (holm/agent/browser/). A page is the HTML of a
`data:` URL (other pages are empty), whose text and attribute values hold the elements a
query finds; the cookies are the box's, and a saved state is its cookies."""

from __future__ import annotations

import base64
import json
import re
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from msgspec.structs import replace

from holm.errors import BadRequest, NotFound, Timeout, Unsupported
from holm.wire import actions as a
from holm.wire import results as r

from .screen import MemoryScreen

if TYPE_CHECKING:
    from .runtime import MemoryBox

# The page actions but the screenshot, which is a frame of the screen (desktop.py).
PageAction = (
    a.OpenUrl
    | a.Tabs
    | a.OnTab
    | a.OnPage
    | a.Look
    | a.Snapshot
    | a.Read
    | a.Evaluate
    | a.PagePdf
    | a.Cookies
    | a.StateSave
    | a.StateLoad
    | a.Console
    | a.Dialog
)


def act(box: MemoryBox, s: MemoryScreen, action: PageAction) -> r.ActionResult:
    """Do a page action in screen `s`'s browser."""
    match action:
        case a.OpenUrl(url=url, target=target, label=label):
            if target == "blank" or not s.tabs:
                s.tabs.insert(0, r.Tab(tab=f"tab-{len(s.tabs) + 1}"))
            front = s.tabs[0]
            front.url, front.title = url, _page_title(url)
            if label is not None:
                for t in s.tabs:
                    t.label = None if t.label == label else t.label
                front.label = label
            _drawn(box, s)
            return r.PageOpened(tab=front.tab, url=url, title=front.title, loaded=True, label=label)
        case a.Tabs():
            # Copies, as the agent's answers are: a later navigation must not reach them.
            return r.TabList(tabs=[replace(t) for t in s.tabs])
        case a.OnTab(tab=tab, close=close):
            chosen = tab_of(s, tab)
            s.tabs.remove(chosen)
            if not close:
                s.tabs.insert(0, chosen)
            _drawn(box, s)
            return r.TabDone(tab=chosen.tab, closed=close)
        case a.OnPage(what=what, tab=tab):
            _drawn(box, s)
            return _on_page(s, tab_of(s, tab), what)
        case a.Look(what=what):
            page = tab_of(s, what.tab)
            hits = [_element(s, page, what.query)] if _has(page, what.query, what.exact) else []
            return r.Found(elements=hits[: what.limit], total=len(hits))
        case a.Snapshot(what=what):
            page = tab_of(s, what.tab)
            return r.PageSnapshot(
                tab=page.tab, url=page.url, title=page.title, controls=_controls(s, page)
            )
        case a.Read(what=what):
            page = tab_of(s, what.tab)
            text = _page_text(page.url)
            return r.PageText(
                tab=page.tab,
                url=page.url,
                title=page.title,
                format=what.format,
                text=text[: what.limit],
                cut=len(text) > what.limit,
            )
        case a.Evaluate(what=what, tab=tab):
            page = tab_of(s, tab)
            if what.expression.strip() == "document.title":
                return r.Evaluated(value=page.title, type="string")
            if what.expression.strip() == "location.href":
                return r.Evaluated(value=page.url, type="string")
            raise Unsupported("the memory runtime evaluates only document.title and location.href")
        case a.PagePdf(what=what):
            tab_of(s, what.tab)
            data = b"%PDF-1.4\n% a page of the memory runtime\n%%EOF\n"
            box.files[what.path] = data
            return r.FileSaved(path=what.path, size=len(data))
        case a.Cookies(what=what):
            return _cookies(box, what)
        case a.StateSave(what=what):
            if what.name is not None:
                raise BadRequest("a named state is kept by the server, not the box")
            jar = [
                {"name": c.name, "value": c.value, "domain": c.domain, "path": c.path}
                for c in box.cookies
            ]
            state = json.dumps({"cookies": jar, "origins": []})
            return r.BrowserState(cookies=len(jar), origins=0, session_json=state)
        case a.StateLoad(what=what):
            if what.session_json is None:
                raise BadRequest("the box loads a state from session_json")
            try:
                loaded = json.loads(what.session_json)["cookies"]
                cookies = [r.Cookie(**c) for c in loaded]
            except (ValueError, KeyError, TypeError) as exc:
                raise BadRequest(f"session_json is not a storage state: {exc}") from None
            box.cookies = cookies
            return r.StateLoaded(cookies=len(cookies), origins=0)
        case a.Console(what=what):
            # The model's pages run no script, so they log nothing.
            tab_of(s, what.tab)
            return r.ConsoleLog(messages=[])
        case a.Dialog():
            raise NotFound("no dialog is open on the page")


def _drawn(box: MemoryBox, s: MemoryScreen) -> None:
    """A page that changed is drawn again (on a running box's screen)."""
    if box.state == "running":
        s.changes.bump()


def _page_html(url: str) -> str:
    if not url.startswith("data:") or "," not in url:
        return ""
    head, _, body = url.partition(",")
    if head.endswith(";base64"):
        return base64.b64decode(body).decode(errors="replace")
    return unquote(body)


def _page_title(url: str) -> str:
    found = re.search(r"<title>(.*?)</title>", _page_html(url), re.S | re.I)
    return found.group(1).strip() if found else ""


def _page_text(url: str) -> str:
    html = re.sub(r"<title>.*?</title>", " ", _page_html(url), flags=re.S | re.I)
    return " ".join(re.sub(r"<[^>]*>", " ", html).split())


def _has(page: r.Tab, query: str, exact: bool) -> bool:
    html = _page_html(page.url)
    values = re.findall(r'(?:placeholder|aria-label|title|alt|value)="([^"]*)"', html)
    texts = [*values, *re.split(r"\s*<[^>]*>\s*", html)]
    if exact:
        return query in [t.strip() for t in texts]
    return any(query.lower() in t.lower() for t in texts)


def tab_of(s: MemoryScreen, tab: str | None) -> r.Tab:
    if tab is None:
        if not s.tabs:
            s.tabs.append(r.Tab(tab="tab-1", url="about:blank"))
        return s.tabs[0]
    for t in s.tabs:
        if tab in (t.tab, t.label):
            return t
    raise NotFound(f"no tab {tab}")


def _element(s: MemoryScreen, page: r.Tab, query: str) -> r.Element:
    value = s.values.get((page.tab, query))
    return r.Element(role="", name=query, value=value)


def _controls(s: MemoryScreen, page: r.Tab) -> list[r.Element]:
    return [
        r.Element(role="textbox", name=query, value=value)
        for (tab, query), value in s.values.items()
        if tab == page.tab
    ]


def _on_page(s: MemoryScreen, page: r.Tab, what: a.ElementOp) -> r.ElementDone:
    op = a.op_of(what)
    match what:
        case a.WaitForOp(query=query, or_=others, gone=gone, exact=exact):
            queries = ([] if query is None else [query]) + others
            for q in queries:
                if _has(page, q, exact) != gone:
                    element = None if gone else _element(s, page, q)
                    return r.ElementDone(op=op, url=page.url, element=element, matched=q)
            if not queries:
                return r.ElementDone(op=op, url=page.url)
            raise Timeout(f"waited for {' or '.join(map(repr, queries))}: never met")
        case a.HistoryOp():
            return r.ElementDone(op=op, url=page.url, navigated=True)
        case a.ScrollOp(query=None):
            return r.ElementDone(op=op, url=page.url)
    query = what.from_ if isinstance(what, a.DragOp) else str(getattr(what, "query", ""))
    if not _has(page, query, bool(getattr(what, "exact", False))):
        raise NotFound(f"nothing on the page matches {query!r}")
    changed: list[r.Element] = []
    options = None
    match what:
        case a.FillOp(text=text):
            s.values[(page.tab, query)] = text
            changed = [_element(s, page, query)]
        case a.ChooseOp(options=chosen):
            options = list(chosen)
            s.values[(page.tab, query)] = ", ".join(chosen)
            changed = [_element(s, page, query)]
        case a.OptionsOp():
            options = []
    return r.ElementDone(
        op=op, url=page.url, element=_element(s, page, query), changed=changed, options=options
    )


def _cookie_domain(url: str | None) -> str:
    return "" if url is None else (urlsplit(url).hostname or "")


def _cookies(box: MemoryBox, what: a.CookiesWhat) -> r.CookieList:
    host = _cookie_domain(what.url)
    mine = [c for c in box.cookies if what.url is None or c.domain.lstrip(".") == host]
    match what.do:
        case "get":
            return r.CookieList(cookies=mine)
        case "set":
            for c in what.cookies:
                if what.url is None and c.domain is None:
                    raise BadRequest(f"cookie {c.name!r} needs a url or a domain")
                domain = c.domain or host
                box.cookies = [k for k in box.cookies if (k.name, k.domain) != (c.name, domain)]
                box.cookies.append(
                    r.Cookie(
                        name=c.name,
                        value=c.value,
                        domain=domain,
                        path=c.path or "/",
                        http_only=c.http_only,
                        secure=c.secure,
                        same_site=c.same_site,
                        expires=c.expires,
                    )
                )
            return r.CookieList(changed=len(what.cookies))
    box.cookies = [c for c in box.cookies if c not in mine]
    return r.CookieList(changed=len(mine))
