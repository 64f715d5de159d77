"""The windows of a screen. These calls are not recorded: only a batch's `on_window` and
`await_window` steps are (as `acted`), so only those are done again by a fork."""

from __future__ import annotations

from aiohttp import web

from holm.adapters.base import WindowInfo
from holm.wire.api import ActiveWindow, ArrangeWindow, Done, WaitWindow, WindowList

from ..routing import Route, body_of, engine_of, int_param, json_response
from .screens import SCREEN

WINDOW = SCREEN + "/windows/{window}"


def _where(request: web.Request) -> tuple[str, int]:
    return request.match_info["id"], int_param(request, "screen")


async def list_windows(request: web.Request) -> web.Response:
    return json_response(WindowList(windows=await engine_of(request).windows(*_where(request))))


async def active_window(request: web.Request) -> web.Response:
    window = await engine_of(request).active_window(*_where(request))
    return json_response(ActiveWindow(window=window))


async def wait_window(request: web.Request) -> web.Response:
    body = await body_of(request, WaitWindow)
    box_id, screen = _where(request)
    window = await engine_of(request).wait_window(
        box_id, screen, body.class_, body.title, body.within_ms
    )
    return json_response(window)


async def focus_window(request: web.Request) -> web.Response:
    box_id, screen = _where(request)
    await engine_of(request).focus_window(box_id, screen, request.match_info["window"])
    return json_response(Done(ok=True))


async def arrange_window(request: web.Request) -> web.Response:
    body = await body_of(request, ArrangeWindow)
    box_id, screen = _where(request)
    window = await engine_of(request).arrange_window(
        box_id, screen, request.match_info["window"], body
    )
    return json_response(window)


async def close_window(request: web.Request) -> web.Response:
    box_id, screen = _where(request)
    await engine_of(request).close_window(box_id, screen, request.match_info["window"])
    return json_response(Done(ok=True))


ROUTES = [
    Route("GET", f"{SCREEN}/windows", list_windows, "List windows", response=WindowList),
    Route(
        "GET",
        f"{SCREEN}/windows/active",
        active_window,
        "Get the window that receives keyboard input",
        response=ActiveWindow,
    ),
    Route(
        "POST",
        f"{SCREEN}/windows/wait",
        wait_window,
        "Wait for a window",
        body=WaitWindow,
        response=WindowInfo,
    ),
    Route("POST", f"{WINDOW}/focus", focus_window, "Bring a window to the front", response=Done),
    Route(
        "POST",
        f"{WINDOW}/arrange",
        arrange_window,
        "Move or resize a window",
        body=ArrangeWindow,
        response=WindowInfo,
    ),
    Route("DELETE", WINDOW, close_window, "Close a window", response=Done),
]
