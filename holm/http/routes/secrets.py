"""A workspace's named secrets (beyond the spec; docs/api.md, "Secrets"): set, listed and
removed by the workspace's own key (the server token's are the server's own), never shown.
A `type` or `fill` step, or an `exec` argument, names one instead of giving its value."""

from __future__ import annotations

from aiohttp import web

from holm.errors import BadRequest, NotFound
from holm.wire.actions import check_secret_name
from holm.wire.api import PutSecret, SecretList, SecretView, TraceShredded
from holm.wire.entries import SecretSet

from ..routing import Route, body_of, caller_of, engine_of, json_response


def _workspace(request: web.Request) -> str:
    return caller_of(request).workspace or ""


def _view(record: SecretSet) -> SecretView:
    return SecretView(name=record.name, bytes=record.bytes, set_at_ms=record.at_ms)


def _name(request: web.Request) -> str:
    name = request.match_info["name"]
    try:
        check_secret_name(name)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    return name


async def list_secrets(request: web.Request) -> web.Response:
    records = engine_of(request).secrets.names(_workspace(request))
    return json_response(SecretList(secrets=[_view(r) for r in records.values()]))


async def put_secret(request: web.Request) -> web.Response:
    name = _name(request)
    body = await body_of(request, PutSecret)
    record = await engine_of(request).secrets.put(_workspace(request), name, body.value)
    return json_response(_view(record))


async def remove_secret(request: web.Request) -> web.Response:
    name = _name(request)
    if not await engine_of(request).secrets.remove(_workspace(request), name):
        raise NotFound(f"no secret named {name!r} in this workspace")
    return web.Response(status=204)


async def shred_trace(request: web.Request) -> web.Response:
    box_id = request.match_info["id"]
    shredded = await engine_of(request).shred_trace(box_id)
    return json_response(TraceShredded(box=box_id, shredded=shredded))


ROUTES = [
    Route(
        "DELETE",
        "/v1/boxes/{id}/trace/secrets",
        shred_trace,
        "Shred the trace's data key: a person's typed text it kept sealed is gone for good",
        response=TraceShredded,
    ),
    Route(
        "GET",
        "/v1/secrets",
        list_secrets,
        "The caller's workspace's named secrets: names and lengths, never values",
        response=SecretList,
    ),
    Route(
        "PUT",
        "/v1/secrets/{name}",
        put_secret,
        "Set a named secret of the caller's workspace, sealed at rest, never shown again",
        body=PutSecret,
        response=SecretView,
    ),
    Route(
        "DELETE",
        "/v1/secrets/{name}",
        remove_secret,
        "Remove a named secret of the caller's workspace",
        status=204,
    ),
]
