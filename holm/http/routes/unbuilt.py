"""Endpoints of the reference that later work brings: each answers `400 unsupported`
saying it is not built yet, never 404 or 500, so a client can tell "not here yet" from a
wrong address."""

from __future__ import annotations

from aiohttp import web

from holm.errors import Unsupported

from ..routing import Auth, Handler, Route

BOX = "/v1/boxes/{id}"
SCREEN = BOX + "/screens/{screen:\\d+}"

_FEATURES: list[tuple[str, list[tuple[str, str]], Auth]] = [
    (
        "remote runtime vendors",
        [
            ("POST", "/v1/runtimes"),
            ("PATCH", "/v1/runtimes/{name}"),
            ("DELETE", "/v1/runtimes/{name}"),
        ],
        "token",
    ),
]


def _unbuilt(feature: str) -> Handler:
    async def refuse(request: web.Request) -> web.Response:
        raise Unsupported(f"not built yet in this server: {feature}")

    return refuse


ROUTES = [
    Route(method, path, _unbuilt(feature), f"Not built yet: {feature}", auth=auth)
    for feature, routes, auth in _FEATURES
    for method, path in routes
]
