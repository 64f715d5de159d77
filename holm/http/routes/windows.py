"""The windows of a screen: each route runs one action and answers its result. These calls
are not recorded: only a batch's `on_window` and `await_window` steps are (as `acted`), so
only those are done again by a fork."""

from __future__ import annotations

from aiohttp import web

from holm.wire.actions import Arrange, AwaitWindow, OnWindow, WindowOp, WindowQuery, Windows
from holm.wire.results import FoundWindow, WindowChanged, WindowList

from ..routing import Route, act_response, body_of, box_and_screen
from .screens import SCREEN

WINDOW = SCREEN + "/windows/{window}"


async def _on_window(request: web.Request, what: WindowOp) -> web.Response:
    _, screen = box_and_screen(request)
    return await act_response(
        request, OnWindow(window=request.match_info["window"], what=what), screen
    )


async def list_windows(request: web.Request) -> web.Response:
    _, screen = box_and_screen(request)
    return await act_response(request, Windows(), screen)


async def active_window(request: web.Request) -> web.Response:
    _, screen = box_and_screen(request)
    return await act_response(request, Windows(active=True), screen)


async def wait_window(request: web.Request) -> web.Response:
    _, screen = box_and_screen(request)
    what = await body_of(request, WindowQuery)
    return await act_response(request, AwaitWindow(what=what), screen)


async def focus_window(request: web.Request) -> web.Response:
    return await _on_window(request, WindowOp(do="focus"))


async def arrange_window(request: web.Request) -> web.Response:
    how = await body_of(request, Arrange)
    return await _on_window(request, WindowOp(do="arrange", how=how))


async def close_window(request: web.Request) -> web.Response:
    return await _on_window(request, WindowOp(do="close"))


ROUTES = [
    Route("GET", f"{SCREEN}/windows", list_windows, "List windows", response=WindowList),
    Route(
        "GET",
        f"{SCREEN}/windows/active",
        active_window,
        "Get the window that receives keyboard input (a list of one, or none)",
        response=WindowList,
    ),
    Route(
        "POST",
        f"{SCREEN}/windows/wait",
        wait_window,
        "Wait for a window",
        body=WindowQuery,
        response=FoundWindow,
    ),
    Route(
        "POST",
        f"{WINDOW}/focus",
        focus_window,
        "Bring a window to the front",
        response=WindowChanged,
    ),
    Route(
        "POST",
        f"{WINDOW}/arrange",
        arrange_window,
        "Move or resize a window",
        body=Arrange,
        response=WindowChanged,
    ),
    Route("DELETE", WINDOW, close_window, "Close a window", response=WindowChanged),
]
