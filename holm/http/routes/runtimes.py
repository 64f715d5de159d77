"""The runtimes this server has, with what each can do; and the vendor API, which adds,
changes and removes remote runtimes (the server token only: a runtime is every
workspace's). A secret given is sealed before it is stored, and no answer gives it back:
a runtime shows the names of its secrets only."""

from __future__ import annotations

from aiohttp import web

from holm.engine import Engine
from holm.errors import NotFound
from holm.wire.api import AddRuntime, ChangeRuntime, RuntimeList, RuntimeView

from ..routing import CONFIG, Route, body_of, engine_of, json_response


def _view(request: web.Request, engine: Engine, name: str) -> RuntimeView:
    runtime = engine.runtimes.get(name)
    if runtime is None:
        raise NotFound(f"no runtime named {name!r}")
    default = request.app[CONFIG].default_runtime
    pool = engine.pool_status(name)
    view = RuntimeView(name=name, default=name == default, can=runtime.can(), pool=pool)
    if engine.ownership is not None:
        view.replica = engine.ownership.me
    record = engine.vendors.record(name)
    if record is not None:
        view.provider = record.provider
        view.fields = dict(record.fields)
        view.secrets = list(record.secret_names)
    return view


async def list_runtimes(request: web.Request) -> web.Response:
    engine = engine_of(request)
    views = [_view(request, engine, name) for name in sorted(engine.runtimes)]
    return json_response(RuntimeList(runtimes=views))


async def get_runtime(request: web.Request) -> web.Response:
    engine = engine_of(request)
    view = _view(request, engine, request.match_info["name"])
    view.room = await engine.room(view.name)
    return json_response(view)


async def add_runtime(request: web.Request) -> web.Response:
    body = await body_of(request, AddRuntime)
    engine = engine_of(request)
    added = await engine.vendors.add(body)
    return json_response(_view(request, engine, added.name))


async def change_runtime(request: web.Request) -> web.Response:
    body = await body_of(request, ChangeRuntime)
    engine = engine_of(request)
    changed = await engine.vendors.change(request.match_info["name"], body)
    return json_response(_view(request, engine, changed.name))


async def remove_runtime(request: web.Request) -> web.Response:
    engine = engine_of(request)
    name = request.match_info["name"]
    view = _view(request, engine, name)
    await engine.vendors.remove(name)
    return json_response(view)


ROUTES = [
    Route("GET", "/v1/runtimes", list_runtimes, "List runtimes", response=RuntimeList),
    Route(
        "GET",
        "/v1/runtimes/{name}",
        get_runtime,
        "Get one runtime with its capabilities (and, beyond the spec, its room for boxes and"
        " its warm pool)",
        response=RuntimeView,
    ),
    Route(
        "POST",
        "/v1/runtimes",
        add_runtime,
        "Add a remote runtime (a vendor); its secrets are sealed and never returned",
        body=AddRuntime,
        response=RuntimeView,
        auth="server",
    ),
    Route(
        "PATCH",
        "/v1/runtimes/{name}",
        change_runtime,
        "Change a remote runtime's fields or secrets",
        body=ChangeRuntime,
        response=RuntimeView,
        auth="server",
    ),
    Route(
        "DELETE",
        "/v1/runtimes/{name}",
        remove_runtime,
        "Remove a remote runtime (refused, 409, while a box uses it)",
        response=RuntimeView,
        auth="server",
    ),
]
