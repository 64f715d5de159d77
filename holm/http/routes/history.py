"""The traces the store keeps; a box's trace, a page at a time, the frames it refers to,
and how two boxes' traces differ (fork fidelity). All answer for a removed box too: a trace
stays after its box."""

from __future__ import annotations

from aiohttp import web

from holm.engine import Engine
from holm.engine.importing import import_trace
from holm.errors import NotFound
from holm.projections.trace_html import (
    CONTENT_SECURITY_POLICY,
    SERVED_CONTENT_SECURITY_POLICY,
    ForkControl,
    TraceSide,
    trace_html,
)
from holm.replay.diff import diff_boxes, side_by_side
from holm.wire.api import TraceImported, TraceList, TracePage, TraceQuery, TraceViewQuery
from holm.wire.archive import MIME, unpack
from holm.wire.diff import TraceDiff
from holm.wire.entries import Entry, FrameSeen

from ..middlewares import caller_key_digest
from ..page_grants import PAGE_GRANTS
from ..routing import Route, caller_of, engine_of, json_response, query_of

BOX = "/v1/boxes/{id}"


async def list_traces(request: web.Request) -> web.Response:
    # A workspace key lists its own boxes' traces; the server token every trace.
    traces = await engine_of(request).traces(seen_by=caller_of(request).workspace)
    return json_response(TraceList(traces=traces))


async def import_a_trace(request: web.Request) -> web.Response:
    """A `.holm` file (holm/wire/archive.py) as the body: its trace stored under a new ID."""
    archive = unpack(await request.read())
    engine = engine_of(request)
    trace = await import_trace(engine, archive, caller_of(request).workspace)
    answer = TraceImported(
        trace=trace,
        source=archive.manifest.trace,
        entries=archive.manifest.entries,
        frames=len(archive.frames),
    )
    return json_response(answer, 201)


async def read_trace(request: web.Request) -> web.Response:
    query = query_of(request, TraceQuery)
    page = await engine_of(request).read_trace(request.match_info["id"], query.after, query.limit)
    return json_response(page)


async def read_frame(request: web.Request) -> web.Response:
    png = await engine_of(request).trace_frame(request.match_info["id"], request.match_info["hash"])
    return web.Response(body=png, content_type="image/png")


async def _whole_trace(engine: Engine, box_id: str) -> TraceSide:
    """A box's whole trace and the frames it keeps, for its page."""
    entries: list[Entry] = []
    after: int | None = None
    incomplete = False
    while True:
        page = await engine.read_trace(box_id, after)
        entries.extend(page.entries)
        incomplete = incomplete or page.incomplete
        if not page.more or not page.entries:
            break
        after = page.next
    frames: dict[str, bytes | None] = {}
    for entry in entries:
        if isinstance(entry, FrameSeen) and entry.frame not in frames:
            try:
                frames[entry.frame] = await engine.trace_frame(box_id, entry.frame)
            except NotFound:
                frames[entry.frame] = None
    return TraceSide(box_id, entries, frames.get, incomplete)


async def view_trace(request: web.Request) -> web.Response:
    """The whole trace as one HTML page, frames inline; with `?with=SOURCE`, SOURCE's trace
    beside it, steps aligned as `holm diff` aligns them (docs/trace.md)."""
    engine = engine_of(request)
    query = query_of(request, TraceViewQuery)
    trace = await _whole_trace(engine, request.match_info["id"])
    policy = CONTENT_SECURITY_POLICY
    if query.with_ is None:
        fork = None
        if query.fork:
            # "Fork from here": a grant for this page's calls, as the caller who read it.
            made = request.app[PAGE_GRANTS].make(
                trace.name, caller_of(request).workspace, caller_key_digest(request)
            )
            fork = ForkControl(trace.name, made.grant)
            policy = SERVED_CONTENT_SECURITY_POLICY
        title = f"Trace of {trace.name}"
        body = trace_html(
            title, trace.entries, trace.frame_png, incomplete=trace.incomplete, fork=fork
        )
    else:
        # A box named in the query, not the path: the guards do not see it (check_boxes).
        engine.box_seen_by(query.with_, caller_of(request).workspace)
        source = await _whole_trace(engine, query.with_)
        body = await side_by_side(source, trace)
    headers = {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store",
        "Referrer-Policy": "no-referrer",
    }
    return web.Response(text=body, content_type="text/html", headers=headers)


async def diff_traces(request: web.Request) -> web.Response:
    diff = await diff_boxes(engine_of(request), request.match_info["id"], request.match_info["b"])
    return json_response(diff)


ROUTES = [
    Route(
        "GET",
        "/v1/traces",
        list_traces,
        "List the traces kept: each one's figures and its box's state and origin",
        response=TraceList,
    ),
    Route(
        "POST",
        "/v1/traces",
        import_a_trace,
        "Import a trace from a .holm file (the body, application/zip) under a new ID",
        response=TraceImported,
        status=201,
        accepts=MIME,
    ),
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
        f"{BOX}/trace/view",
        view_trace,
        "The trace as one self-contained HTML page, frames inline; `with`: another box's "
        "trace beside it (a fork's source), steps aligned as in the diff; `fork` (default "
        "true, one trace only): a 'fork from here' button, with a short-lived grant",
        query=TraceViewQuery,
        content_type="text/html",
    ),
    Route(
        "GET",
        f"{BOX}/diff/{{b}}",
        diff_traces,
        "Align two boxes' traces step by step and compare their last frames",
        response=TraceDiff,
    ),
]
