"""A screen: a batch of actions, the frame, the pointer, the clipboard."""

from __future__ import annotations

from aiohttp import web

from holm.engine.batch import frame_view
from holm.errors import BadRequest
from holm.wire.actions import Clipboard, Cursor
from holm.wire.api import (
    ActionsRequest,
    ActionsResult,
    ClipboardPut,
    ClipboardQuery,
    FrameQuery,
    FrameView,
)
from holm.wire.results import ClipboardView
from holm.wire.values import Point, Region, encoding_of

from ..routing import (
    Route,
    act_response,
    body_of,
    box_and_screen,
    engine_of,
    json_response,
    query_of,
)

SCREEN = "/v1/boxes/{id}/screens/{screen:\\d+}"


async def run_actions(request: web.Request) -> web.Response:
    body = await body_of(request, ActionsRequest)
    box_id, screen = box_and_screen(request)
    return json_response(await engine_of(request).run_batch(box_id, screen, body))


async def get_frame(request: web.Request) -> web.Response:
    query = query_of(request, FrameQuery)
    box_id, screen = box_and_screen(request)
    frame = await engine_of(request).frame(
        box_id,
        screen,
        have=query.have,
        window=query.window,
        region=region_of(query),
        scale=query.scale,
        encoding=encoding_of(query.format, query.quality),
    )
    return json_response(frame_view(frame))


def region_of(query: FrameQuery) -> Region | None:
    given = (query.x, query.y, query.width, query.height)
    if all(value is None for value in given):
        return None
    if query.x is None or query.y is None or query.width is None or query.height is None:
        raise BadRequest("a rectangle needs all of x, y, width and height")
    return Region(x=query.x, y=query.y, width=query.width, height=query.height)


async def get_cursor(request: web.Request) -> web.Response:
    _, screen = box_and_screen(request)
    return await act_response(request, Cursor(), screen)


async def get_clipboard(request: web.Request) -> web.Response:
    _, screen = box_and_screen(request)
    selection = query_of(request, ClipboardQuery).selection
    return await act_response(request, Clipboard(selection=selection), screen)


async def put_clipboard(request: web.Request) -> web.Response:
    _, screen = box_and_screen(request)
    body = await body_of(request, ClipboardPut)
    return await act_response(request, Clipboard(selection=body.selection, text=body.text), screen)


ROUTES = [
    Route(
        "POST",
        f"{SCREEN}/actions",
        run_actions,
        "Run a batch of actions (one batch at a time per screen)",
        body=ActionsRequest,
        response=ActionsResult,
        idempotent=True,
    ),
    Route(
        "GET",
        f"{SCREEN}/frame",
        get_frame,
        "Get a screenshot",
        query=FrameQuery,
        response=FrameView,
    ),
    Route("GET", f"{SCREEN}/cursor", get_cursor, "Get the pointer position", response=Point),
    Route(
        "GET",
        f"{SCREEN}/clipboard",
        get_clipboard,
        "Read the clipboard",
        query=ClipboardQuery,
        response=ClipboardView,
    ),
    Route(
        "PUT",
        f"{SCREEN}/clipboard",
        put_clipboard,
        "Set the clipboard",
        body=ClipboardPut,
        response=ClipboardView,
    ),
]
