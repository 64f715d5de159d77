"""`GET /v1/events`: the feed of what happened to boxes, screens and images."""

from __future__ import annotations

from aiohttp import web

from holm.engine.journal import now_ms
from holm.wire.api import EventsQuery
from holm.wire.feed import EventsPage

from ..routing import Route, caller_of, engine_of, json_response, query_of


async def read_events(request: web.Request) -> web.Response:
    query = query_of(request, EventsQuery)
    feed = engine_of(request).feed
    # A workspace reads its own boxes' events; the server (owner None) reads every event.
    owner = caller_of(request).workspace
    page = feed.read(now_ms=now_ms(), after=query.after, limit=query.limit, owner=owner)
    return json_response(page)


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
