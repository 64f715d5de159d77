"""`GET /v1/events`: the feed of what happened to boxes, screens and images."""

from __future__ import annotations

import msgspec
from aiohttp import web

from holm.engine import Engine
from holm.engine.journal import now_ms
from holm.projections.views import viewer_pages
from holm.wire.api import EventsQuery
from holm.wire.feed import Event, EventsPage

from ..routing import Route, caller_of, engine_of, json_response, public_base, query_of


async def read_events(request: web.Request) -> web.Response:
    query = query_of(request, EventsQuery)
    engine = engine_of(request)
    # A workspace reads its own boxes' events; the server (owner None) reads every event.
    owner = caller_of(request).workspace
    page = engine.feed.read(now_ms=now_ms(), after=query.after, limit=query.limit, owner=owner)
    base = public_base(request)
    shown = [_with_viewer_pages(engine, event, base) for event in page.events]
    return json_response(msgspec.structs.replace(page, events=shown))


def _with_viewer_pages(engine: Engine, event: Event, base: str) -> Event:
    """`box.ready` names the box's viewers as the box does (`GET /v1/boxes/{id}`): the
    server's viewer pages, not the runtime's sockets, whose paths are the server's own."""
    data = event.data or {}
    urls = data.get("viewer_urls")
    if event.kind != "box.ready" or not urls or event.box_id is None:
        return event
    state = engine.state_of(event.box_id)
    pages = viewer_pages(event.box_id, len(urls), base, state.spec if state else None)
    return msgspec.structs.replace(event, data={**data, "viewer_urls": pages})


ROUTES = [
    Route(
        "GET",
        "/v1/events",
        read_events,
        "Read events in order (send `next` as `after`)",
        query=EventsQuery,
        response=EventsPage,
    ),
]
