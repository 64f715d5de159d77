"""The runtimes this server has, with what each can do."""

from __future__ import annotations

from aiohttp import web

from holm.errors import NotFound
from holm.wire.api import RuntimeList, RuntimeView
from holm.wire.runtime import Capabilities

from ..routing import CONFIG, Route, engine_of, json_response


def _view(request: web.Request, name: str, can: Capabilities) -> RuntimeView:
    default = request.app[CONFIG].default_runtime
    return RuntimeView(name=name, default=name == default, can=can)


async def list_runtimes(request: web.Request) -> web.Response:
    capabilities = engine_of(request).capabilities()
    views = [_view(request, name, capabilities[name]) for name in sorted(capabilities)]
    return json_response(RuntimeList(runtimes=views))


async def get_runtime(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    can = engine_of(request).capabilities().get(name)
    if can is None:
        raise NotFound(f"no runtime named {name!r}")
    return json_response(_view(request, name, can))


ROUTES = [
    Route("GET", "/v1/runtimes", list_runtimes, "List runtimes", response=RuntimeList),
    Route(
        "GET",
        "/v1/runtimes/{name}",
        get_runtime,
        "Get one runtime with its capabilities",
        response=RuntimeView,
    ),
]
