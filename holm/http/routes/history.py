"""A box's trace, a page at a time, the frames it refers to, and how two boxes' traces
differ (fork fidelity). All answer for a removed box too: a trace stays after its box."""

from __future__ import annotations

from aiohttp import web

from holm.replay.diff import diff_boxes
from holm.wire.api import TracePage, TraceQuery
from holm.wire.diff import TraceDiff

from ..routing import Route, engine_of, json_response, query_of

BOX = "/v1/boxes/{id}"


async def read_trace(request: web.Request) -> web.Response:
    query = query_of(request, TraceQuery)
    page = await engine_of(request).read_trace(request.match_info["id"], query.after, query.limit)
    return json_response(page)


async def read_frame(request: web.Request) -> web.Response:
    png = await engine_of(request).trace_frame(request.match_info["id"], request.match_info["hash"])
    return web.Response(body=png, content_type="image/png")


async def diff_traces(request: web.Request) -> web.Response:
    diff = await diff_boxes(engine_of(request), request.match_info["id"], request.match_info["b"])
    return json_response(diff)


ROUTES = [
    Route(
        "GET",
        f"{BOX}/trace",
        read_trace,
        "Read the trace (send `next` as `after`)",
        query=TraceQuery,
        response=TracePage,
    ),
    Route(
        "GET",
        f"{BOX}/trace/frames/{{hash}}",
        read_frame,
        "Get a frame that the trace refers to (a PNG)",
        content_type="image/png",
    ),
    Route(
        "GET",
        f"{BOX}/diff/{{b}}",
        diff_traces,
        "Align two boxes' traces step by step and compare their last frames",
        response=TraceDiff,
    ),
]
