"""A screen's recording: an MP4 that ffmpeg writes in the box (the `record` action, each
verb of it a method of one resource)."""

from __future__ import annotations

from aiohttp import web

from holm.wire.actions import Record, RecordWhat
from holm.wire.api import RecordingStart
from holm.wire.results import Recording

from ..routing import Route, act_response, body_of, box_and_screen

SCREEN = "/v1/boxes/{id}/screens/{screen:\\d+}"


async def get_recording(request: web.Request) -> web.Response:
    _, screen = box_and_screen(request)
    return await act_response(request, Record(what=RecordWhat(do="status")), screen)


async def start_recording(request: web.Request) -> web.Response:
    _, screen = box_and_screen(request)
    body = await body_of(request, RecordingStart)
    return await act_response(request, Record(what=RecordWhat(do="start", fps=body.fps)), screen)


async def stop_recording(request: web.Request) -> web.Response:
    _, screen = box_and_screen(request)
    return await act_response(request, Record(what=RecordWhat(do="stop")), screen)


ROUTES = [
    Route(
        "GET",
        f"{SCREEN}/recording",
        get_recording,
        "Get the recording state: the one running, else the last one",
        response=Recording,
    ),
    Route(
        "POST",
        f"{SCREEN}/recording",
        start_recording,
        "Start a recording (needs the `video` feature)",
        body=RecordingStart,
        response=Recording,
    ),
    Route(
        "DELETE",
        f"{SCREEN}/recording",
        stop_recording,
        "Stop the recording; its MP4 stays in the box at `path`",
        response=Recording,
    ),
]
