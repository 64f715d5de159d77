"""How a route is declared (method, path, handler, and the wire types of its query, body and
answer, from which the OpenAPI document is generated), and the helpers every handler uses
to decode a request into a wire type and to answer one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import msgspec
from aiohttp import web

from holm.config import Config
from holm.engine import Engine
from holm.errors import BadRequest
from holm.wire.actions import Action

from .access import Access
from .workspaces import Workspaces

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# `token`: the server token or a workspace's key; `server`: the server token only; `cron`:
# the server token or `CRON_SECRET`; `none`: no bearer token (a ticket, or nothing to guard).
Auth = Literal["none", "token", "server", "cron"]
T = TypeVar("T")


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: Handler
    summary: str
    query: type | None = None
    # A wire type, or a tagged union of them (an element operation).
    body: Any = None
    response: Any = None
    # For an answer that is no wire type (the OpenAPI document itself).
    response_schema: dict[str, Any] | None = None
    # The status of a success; `also` lists other success statuses (202 when queued).
    status: int = 200
    also: tuple[int, ...] = ()
    auth: Auth = "token"
    idempotent: bool = False
    content_type: str = "application/json"
    tags: tuple[str, ...] = field(default=())
    # The content-type a body must have (the middlewares refuse another).
    accepts: str = "application/json"


@dataclass(frozen=True)
class Caller:
    """Who a request is from, settled once by the guards: the server (its token, or anyone
    when auth is off) or one workspace (its key), which sees only its own boxes."""

    # The `ws_…` id; None for the server, which sees everything.
    workspace: str | None = None


SERVER = Caller()


CONFIG = web.AppKey("config", Config)
ACCESS = web.AppKey("access", Access)
# The engine, set when the app starts (before it is frozen) by `create_app`.
ENGINE = web.AppKey("engine", Engine)
ROUTES = web.AppKey("routes", dict[tuple[str, str], Route])
WORKSPACES = web.AppKey("workspaces", Workspaces)
CALLER = web.RequestKey("caller", Caller)
# The path parameters that name a box: a workspace's request may name only its own boxes.
BOX_PARAMETERS = ("id", "b")

_encoder = msgspec.json.Encoder()
_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def engine_of(request: web.Request) -> Engine:
    return request.app[ENGINE]


def caller_of(request: web.Request) -> Caller:
    """Who the request is from: the guards settle it on every route that takes a token."""
    return request[CALLER]


def route_of(request: web.Request) -> Route | None:
    """The declared route a request matched, or None for an unknown path or method."""
    info = request.match_info
    if info.http_exception is not None:
        return None
    resource = info.route.resource
    if resource is None:
        return None
    return request.app[ROUTES].get((request.method, resource.canonical))


async def body_of(request: web.Request, type_: type[T]) -> T:
    """The request's JSON body as `type_`; an empty body is `{}`."""
    raw = await request.read()
    decoder = _decoders.get(type_)
    if decoder is None:
        decoder = _decoders[type_] = msgspec.json.Decoder(type_)
    try:
        return decoder.decode(raw or b"{}")  # type: ignore[no-any-return]
    except msgspec.ValidationError as exc:
        raise BadRequest(f"bad body: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise BadRequest(f"the body is not valid JSON: {exc}") from exc


def query_of(request: web.Request, type_: type[T]) -> T:
    """The query string as `type_` (numbers and booleans converted from their text)."""
    try:
        return msgspec.convert(dict(request.query), type_, strict=False)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"bad query: {exc}") from exc


# Where RFC 9728's metadata of this server is (routes/protected_resource.py), which each
# 401 names; and the MCP endpoint (mcp/), whose refusals an MCP client reads as JSON-RPC.
WELL_KNOWN_RESOURCE = "/.well-known/oauth-protected-resource"
MCP_PATH = "/mcp"


def json_response(value: object, status: int = 200) -> web.Response:
    return web.Response(body=_encoder.encode(value), status=status, content_type="application/json")


def public_base(request: web.Request) -> str:
    """The origin a person's browser reaches this server at: `HOLM_PUBLIC_URL`, else the
    address the request came in on (its `Host`, which the guards checked)."""
    public = request.app[CONFIG].public_url
    if public:
        return public.rstrip("/")
    return f"{request.scheme}://{request.host}"


def box_and_screen(request: web.Request) -> tuple[str, int]:
    """The box id and screen number of a `…/screens/{screen}/…` route (whose pattern
    already restricts the screen to digits)."""
    return request.match_info["id"], int(request.match_info["screen"])


async def act_response(request: web.Request, action: Action, screen: int = 0) -> web.Response:
    """Run one action in the route's box (on `screen`) and answer its result: the same
    shape a batch step of that action answers."""
    return json_response(await engine_of(request).act(request.match_info["id"], screen, action))
