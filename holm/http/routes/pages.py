"""The pages of a box's Chromium (its first screen): each route runs one page action and
answers its result, as a batch step of that action would. These calls are not recorded
(only a batch's page steps are, as `acted`, so only those are done again by a fork), except
a page screenshot or PDF, which is a `page_captured` entry (engine/recording.py). Cookies
are read, set and cleared here only, never recorded: a batch refuses a `cookies` step."""

from __future__ import annotations

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
from holm.wire.api import CookiesPut, ElementQuery, FindQuery, TabQuery, UrlQuery
from holm.wire.results import (
    ConsoleLog,
    CookieList,
    ElementDone,
    Evaluated,
    FileSaved,
    Found,
    PageCaptured,
    PageSnapshot,
    PageText,
    TabDone,
    TabList,
)

from ..routing import Route, act_response, body_of, query_of

BOX = "/v1/boxes/{id}"
PAGE = BOX + "/page"
# The page routes drive the Chromium of the box's first screen.
SCREEN = 0


async def list_tabs(request: web.Request) -> web.Response:
    return await act_response(request, Tabs(), SCREEN)


async def close_tab(request: web.Request) -> web.Response:
    return await act_response(request, OnTab(tab=request.match_info["tab"], close=True), SCREEN)


async def focus_tab(request: web.Request) -> web.Response:
    return await act_response(request, OnTab(tab=request.match_info["tab"]), SCREEN)


async def read_page(request: web.Request) -> web.Response:
    return await act_response(request, Read(what=query_of(request, ReadWhat)), SCREEN)


async def find(request: web.Request) -> web.Response:
    q = query_of(request, FindQuery)
    what = LookWhat(
        query=q.q, limit=q.limit, scroll=q.scroll, exact=q.exact, role=q.role, tab=q.tab
    )
    return await act_response(request, Look(what=what), SCREEN)


async def snapshot(request: web.Request) -> web.Response:
    return await act_response(request, Snapshot(what=query_of(request, SnapshotWhat)), SCREEN)


async def element(request: web.Request) -> web.Response:
    q = query_of(request, ElementQuery)
    what: ElementOp = await body_of(request, ElementOp)  # type: ignore[arg-type]
    action = OnPage(what=what, tab=q.tab, settle_ms=q.settle_ms)
    return await act_response(request, action, SCREEN)


async def evaluate(request: web.Request) -> web.Response:
    q = query_of(request, TabQuery)
    what = await body_of(request, EvaluateWhat)
    return await act_response(request, Evaluate(what=what, tab=q.tab), SCREEN)


async def screenshot(request: web.Request) -> web.Response:
    return await act_response(request, PageShot(what=await body_of(request, PageShotWhat)), SCREEN)


async def pdf(request: web.Request) -> web.Response:
    return await act_response(request, PagePdf(what=await body_of(request, PdfWhat)), SCREEN)


async def console(request: web.Request) -> web.Response:
    return await act_response(request, Console(what=await body_of(request, ConsoleWhat)), SCREEN)


async def list_cookies(request: web.Request) -> web.Response:
    q = query_of(request, UrlQuery)
    return await act_response(request, Cookies(what=CookiesWhat(do="get", url=q.url)), SCREEN)


async def set_cookies(request: web.Request) -> web.Response:
    body = await body_of(request, CookiesPut)
    what = CookiesWhat(do="set", url=body.url, cookies=body.cookies)
    return await act_response(request, Cookies(what=what), SCREEN)


async def clear_cookies(request: web.Request) -> web.Response:
    q = query_of(request, UrlQuery)
    return await act_response(request, Cookies(what=CookiesWhat(do="clear", url=q.url)), SCREEN)


ROUTES = [
    Route("GET", f"{BOX}/pages", list_tabs, "List tabs", response=TabList),
    Route("DELETE", f"{BOX}/pages/{{tab}}", close_tab, "Close a tab", response=TabDone),
    Route(
        "POST",
        f"{BOX}/pages/{{tab}}/focus",
        focus_tab,
        "Bring a tab to the front",
        response=TabDone,
    ),
    Route("GET", PAGE, read_page, "Read the page", query=ReadWhat, response=PageText),
    Route("GET", f"{PAGE}/find", find, "Find elements", query=FindQuery, response=Found),
    Route(
        "GET",
        f"{PAGE}/snapshot",
        snapshot,
        "List the controls on the page",
        query=SnapshotWhat,
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
        body=PageShotWhat,
        response=PageCaptured,
    ),
    Route("POST", f"{PAGE}/pdf", pdf, "Print the page", body=PdfWhat, response=FileSaved),
    Route(
        "POST",
        f"{PAGE}/console",
        console,
        "Read the console",
        body=ConsoleWhat,
        response=ConsoleLog,
    ),
    Route(
        "GET", f"{BOX}/cookies", list_cookies, "List cookies", query=UrlQuery, response=CookieList
    ),
    Route(
        "POST", f"{BOX}/cookies", set_cookies, "Set cookies", body=CookiesPut, response=CookieList
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
