"""The runtimes this server has, with what each can do."""

from __future__ import annotations

from aiohttp import web

from holm.adapters.base import Runtime
from holm.errors import NotFound
from holm.wire.api import RuntimeList, RuntimeView

from ..routing import CONFIG, Route, engine_of, json_response


def _view(request: web.Request, runtime: Runtime) -> RuntimeView:
    default = request.app[CONFIG].default_runtime
    return RuntimeView(name=runtime.name, default=runtime.name == default, can=runtime.can())


async def list_runtimes(request: web.Request) -> web.Response:
    runtimes = engine_of(request).runtimes
    views = [_view(request, runtimes[name]) for name in sorted(runtimes)]
    return json_response(RuntimeList(runtimes=views))


async def get_runtime(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    runtime = engine_of(request).runtimes.get(name)
    if runtime is None:
        raise NotFound(f"no runtime named {name!r}")
    return json_response(_view(request, runtime))


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
