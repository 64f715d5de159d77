"""`GET /v1/health`: answers without a token, so a load balancer can ask it."""

from __future__ import annotations

from aiohttp import web

from holm.wire.api import Health

from ..routing import Route, json_response

_HEALTHY = json_response(Health(ok=True, service="holm-server")).body


async def health(request: web.Request) -> web.Response:
    return web.Response(body=_HEALTHY, content_type="application/json")


ROUTES = [
    Route("GET", "/v1/health", health, "Is the server up", response=Health, auth="none"),
]
