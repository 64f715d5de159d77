"""The windows of a screen. These calls are not recorded: only a batch's `on_window` and
`await_window` steps are (as `acted`), so only those are done again by a fork."""

from __future__ import annotations

from aiohttp import web

from holm.adapters.base import WindowInfo
from holm.wire.api import ActiveWindow, ArrangeWindow, Done, WaitWindow, WindowList

from ..routing import Route, body_of, box_and_screen, engine_of, json_response
from .screens import SCREEN

WINDOW = SCREEN + "/windows/{window}"


async def list_windows(request: web.Request) -> web.Response:
    return json_response(
        WindowList(windows=await engine_of(request).windows(*box_and_screen(request)))
    )


async def active_window(request: web.Request) -> web.Response:
    window = await engine_of(request).active_window(*box_and_screen(request))
    return json_response(ActiveWindow(window=window))


async def wait_window(request: web.Request) -> web.Response:
    body = await body_of(request, WaitWindow)
    box_id, screen = box_and_screen(request)
    window = await engine_of(request).wait_window(
        box_id, screen, body.class_, body.title, body.within_ms
    )
    return json_response(window)


async def focus_window(request: web.Request) -> web.Response:
    box_id, screen = box_and_screen(request)
    await engine_of(request).focus_window(box_id, screen, request.match_info["window"])
    return json_response(Done(ok=True))


async def arrange_window(request: web.Request) -> web.Response:
    body = await body_of(request, ArrangeWindow)
    box_id, screen = box_and_screen(request)
    window = await engine_of(request).arrange_window(
        box_id, screen, request.match_info["window"], body
    )
    return json_response(window)


async def close_window(request: web.Request) -> web.Response:
    box_id, screen = box_and_screen(request)
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
