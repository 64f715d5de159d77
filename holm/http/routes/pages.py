"""The pages of a box's Chromium: each screen has its own (with its own profile), and
`screen` in the query (default 0) says whose. Each route runs one page action and answers
its result, as a batch step of that action would on that screen. These calls are not recorded
(only a batch's page steps are, as `acted`, so only those are done again by a fork), except
a page screenshot or PDF, which is a `page_captured` entry (engine/trace_rules.py). Cookies
are read, set and cleared here only, never recorded: a batch refuses a `cookies` step."""

from __future__ import annotations

from typing import TypeVar

import msgspec
from aiohttp import web

from holm.wire.actions import (
    Console,
    ConsoleWhat,
    Cookies,
    CookiesWhat,
    ElementOp,
    Evaluate,
    EvaluateWhat,
    Look,
    LookWhat,
    OnPage,
    OnTab,
    PagePdf,
    PageShot,
    PageShotWhat,
    PdfWhat,
    Read,
    ReadWhat,
    Snapshot,
    SnapshotWhat,
    Tabs,
)
from holm.wire.api import (
    CookiesPut,
    ElementQuery,
    FindQuery,
    ReadQuery,
    ScreenQuery,
    SnapshotQuery,
    TabQuery,
    UrlQuery,
)
from holm.wire.results import (
    ConsoleLog,
    CookieList,
    ElementDone,
    Evaluated,
    FileSaved,
    Found,
    PageShotTaken,
    PageSnapshot,
    PageText,
    TabDone,
    TabList,
)

from ..routing import Route, act_response, body_of, query_of

BOX = "/v1/boxes/{id}"
PAGE = BOX + "/page"
T = TypeVar("T", bound=msgspec.Struct)


def screen_of(request: web.Request) -> int:
    """The screen whose Chromium the route drives (`screen` in the query, default 0)."""
    return query_of(request, ScreenQuery).screen


def _what(q: ReadQuery | SnapshotQuery, kind: type[T]) -> T:
    """The action's part of a query that also names the screen."""
    return kind(**{name: getattr(q, name) for name in kind.__struct_fields__})


async def list_tabs(request: web.Request) -> web.Response:
    return await act_response(request, Tabs(), screen_of(request))


async def close_tab(request: web.Request) -> web.Response:
    action = OnTab(tab=request.match_info["tab"], close=True)
    return await act_response(request, action, screen_of(request))


async def focus_tab(request: web.Request) -> web.Response:
    action = OnTab(tab=request.match_info["tab"])
    return await act_response(request, action, screen_of(request))


async def read_page(request: web.Request) -> web.Response:
    q = query_of(request, ReadQuery)
    return await act_response(request, Read(what=_what(q, ReadWhat)), q.screen)


async def find(request: web.Request) -> web.Response:
    q = query_of(request, FindQuery)
    what = LookWhat(
        query=q.q, limit=q.limit, scroll=q.scroll, exact=q.exact, role=q.role, tab=q.tab
    )
    return await act_response(request, Look(what=what), q.screen)


async def snapshot(request: web.Request) -> web.Response:
    q = query_of(request, SnapshotQuery)
    return await act_response(request, Snapshot(what=_what(q, SnapshotWhat)), q.screen)


async def element(request: web.Request) -> web.Response:
    q = query_of(request, ElementQuery)
    what: ElementOp = await body_of(request, ElementOp)  # type: ignore[arg-type]
    action = OnPage(what=what, tab=q.tab, settle_ms=q.settle_ms)
    return await act_response(request, action, q.screen)


async def evaluate(request: web.Request) -> web.Response:
    q = query_of(request, TabQuery)
    what = await body_of(request, EvaluateWhat)
    return await act_response(request, Evaluate(what=what, tab=q.tab), q.screen)


async def screenshot(request: web.Request) -> web.Response:
    action = PageShot(what=await body_of(request, PageShotWhat))
    return await act_response(request, action, screen_of(request))


async def pdf(request: web.Request) -> web.Response:
    action = PagePdf(what=await body_of(request, PdfWhat))
    return await act_response(request, action, screen_of(request))


async def console(request: web.Request) -> web.Response:
    action = Console(what=await body_of(request, ConsoleWhat))
    return await act_response(request, action, screen_of(request))


async def list_cookies(request: web.Request) -> web.Response:
    q = query_of(request, UrlQuery)
    return await act_response(request, Cookies(what=CookiesWhat(do="get", url=q.url)), q.screen)


async def set_cookies(request: web.Request) -> web.Response:
    body = await body_of(request, CookiesPut)
    what = CookiesWhat(do="set", url=body.url, cookies=body.cookies)
    return await act_response(request, Cookies(what=what), screen_of(request))


async def clear_cookies(request: web.Request) -> web.Response:
    q = query_of(request, UrlQuery)
    what = CookiesWhat(do="clear", url=q.url)
    return await act_response(request, Cookies(what=what), q.screen)


ROUTES = [
    Route("GET", f"{BOX}/pages", list_tabs, "List tabs", query=ScreenQuery, response=TabList),
    Route(
        "DELETE",
        f"{BOX}/pages/{{tab}}",
        close_tab,
        "Close a tab",
        query=ScreenQuery,
        response=TabDone,
    ),
    Route(
        "POST",
        f"{BOX}/pages/{{tab}}/focus",
        focus_tab,
        "Bring a tab to the front",
        query=ScreenQuery,
        response=TabDone,
    ),
    Route("GET", PAGE, read_page, "Read the page", query=ReadQuery, response=PageText),
    Route("GET", f"{PAGE}/find", find, "Find elements", query=FindQuery, response=Found),
    Route(
        "GET",
        f"{PAGE}/snapshot",
        snapshot,
        "List the controls on the page",
        query=SnapshotQuery,
        response=PageSnapshot,
    ),
    Route(
        "POST",
        f"{PAGE}/element",
        element,
        "Act on an element",
        query=ElementQuery,
        body=ElementOp,
        response=ElementDone,
    ),
    Route(
        "POST",
        f"{PAGE}/evaluate",
        evaluate,
        "Run JavaScript",
        query=TabQuery,
        body=EvaluateWhat,
        response=Evaluated,
    ),
    Route(
        "POST",
        f"{PAGE}/screenshot",
        screenshot,
        "Capture the page",
        query=ScreenQuery,
        body=PageShotWhat,
        response=PageShotTaken,
    ),
    Route(
        "POST",
        f"{PAGE}/pdf",
        pdf,
        "Print the page",
        query=ScreenQuery,
        body=PdfWhat,
        response=FileSaved,
    ),
    Route(
        "POST",
        f"{PAGE}/console",
        console,
        "Read the console",
        query=ScreenQuery,
        body=ConsoleWhat,
        response=ConsoleLog,
    ),
    Route(
        "GET", f"{BOX}/cookies", list_cookies, "List cookies", query=UrlQuery, response=CookieList
    ),
    Route(
        "POST",
        f"{BOX}/cookies",
        set_cookies,
        "Set cookies",
        query=ScreenQuery,
        body=CookiesPut,
        response=CookieList,
    ),
    Route(
        "DELETE",
        f"{BOX}/cookies",
        clear_cookies,
        "Clear cookies",
        query=UrlQuery,
        response=CookieList,
    ),
]
