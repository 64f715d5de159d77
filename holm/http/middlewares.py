"""The middlewares every request passes, outermost first: errors (every failure becomes the
error body with its code and status), guards (who may call: the Host, where a browser says
the request comes from, the bearer token, the body's type), body size.

Choices the spec leaves open (docs/api.md says them too):
- A missing or wrong token (or a removed key): `401` with code `denied` (and
  `WWW-Authenticate: Bearer resource_metadata="…/.well-known/oauth-protected-resource"`,
  RFC 9728's metadata, which MCP clients look for). On `/mcp`, a refusal's body also
  carries a JSON-RPC error (`McpRefusal`), which is what an MCP client shows.
- A workspace's key on a route that takes the server token only (workspaces and keys,
  removing an image, scheduled work): `403` with code `denied`.
- A workspace's key naming a box that is not its own: `404 not_found`, the very answer an
  absent box gets, so that whether another workspace's box exists is not told.
- A known path with a method it does not have: `405` with code `bad_request` and `Allow`.
- A body over `HOLM_MAX_BODY_BYTES`: `413` with code `bad_request`.
- A `Host` that does not name this server (DNS rebinding): `421` with code `denied`.
- A request a browser sends from another site or origin (`Sec-Fetch-Site`, `Origin`):
  `403` with code `denied`.
- A body that does not say `content-type: application/json`: `415` with code
  `bad_request`. A browser may send `text/plain` (or a body with no type) to any address
  without asking first; JSON it may not. A request without a body passes.

The routes that take no token (health, the OpenAPI document, the ticket routes of viewers
and DevTools) pass none of the guards: they change nothing, or a ticket authorises them.
"""

from __future__ import annotations

import contextlib
import hmac
import logging

import msgspec
from aiohttp import web
from aiohttp.typedefs import Handler

from holm.config import Config
from holm.errors import (
    BadCredential,
    BadRequest,
    Denied,
    ErrorBody,
    HolmError,
    Internal,
    NotFound,
)
from holm.wire.access import is_loopback

from .access import Access, host_and_port, origin_of
from .page_grants import GRANT_PREFIX, GRANT_USED, PAGE_GRANTS, PageGrant
from .routing import (
    ACCESS,
    BOX_PARAMETERS,
    CALLER,
    CONFIG,
    MCP_PATH,
    SERVER,
    WELL_KNOWN_RESOURCE,
    WORKSPACES,
    Caller,
    Route,
    engine_of,
    json_response,
    public_base,
    route_of,
)
from .workspaces import KEY_PREFIX, Workspaces, digest_of

log = logging.getLogger(__name__)


class Unauthorized(BadCredential):
    """A missing or wrong bearer token: 401 with the bearer challenge."""


class ServerOnly(Denied):
    status = 403
    retryable_default = False


class MethodNotAllowed(BadRequest):
    status = 405


class TooLarge(BadRequest):
    status = 413


class UnsupportedMediaType(BadRequest):
    status = 415


class CrossSite(Denied):
    status = 403
    retryable_default = False


class MisdirectedHost(Denied):
    status = 421
    retryable_default = False


# JSON-RPC's code for a request the server will not take.
JSONRPC_INVALID_REQUEST = -32600


class JsonRpcError(msgspec.Struct):
    code: int
    message: str


class McpRefusal(msgspec.Struct, kw_only=True, omit_defaults=False):
    """The error body of a request to `/mcp` that the guards refuse (a 401, 403, 413, 415,
    421): holm's error body, and a JSON-RPC error beside it, since that is what an MCP
    client reads from an answer that is not a 2xx (the SDK's shows its `message`)."""

    code: str
    message: str
    retryable: bool
    jsonrpc: str = "2.0"
    id: None = None
    error: JsonRpcError


def error_response(exc: BaseException, request: web.Request) -> web.Response:
    """The answer for any failure: a holm error as it is, aiohttp's own (an unknown route,
    a method, a body too large) mapped to one, anything else an `internal` error."""
    headers: dict[str, str] = {}
    if isinstance(exc, web.HTTPException) and not isinstance(exc, HolmError):
        exc, headers = _from_http(exc, request)
    if not isinstance(exc, HolmError):
        log.error("unexpected error on %s %s", request.method, request.path, exc_info=exc)
        exc = Internal(f"a server error: {type(exc).__name__}")
    if isinstance(exc, Unauthorized):
        metadata = f"{public_base(request)}{WELL_KNOWN_RESOURCE}"
        headers["WWW-Authenticate"] = f'Bearer resource_metadata="{metadata}"'
    body: ErrorBody | McpRefusal = ErrorBody(exc.code, exc.message, exc.retryable)
    if request.path == MCP_PATH:
        body = McpRefusal(
            code=exc.code,
            message=exc.message,
            retryable=exc.retryable,
            error=JsonRpcError(JSONRPC_INVALID_REQUEST, f"{exc.code}: {exc.message}"),
        )
    response = json_response(body, exc.status)
    response.headers.update(headers)
    return response


def _from_http(exc: web.HTTPException, request: web.Request) -> tuple[HolmError, dict[str, str]]:
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = ", ".join(sorted(exc.allowed_methods))
        message = f"{request.method} is not allowed on {request.path}; use {allowed}"
        return MethodNotAllowed(message), {"Allow": allowed}
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        return TooLarge(_too_large(request.app[CONFIG])), {}
    if isinstance(exc, web.HTTPNotFound):
        return NotFound(f"no route {request.method} {request.path}"), {}
    return BadRequest(f"{exc.status} {exc.reason}"), {}


def _too_large(config: Config) -> str:
    return f"the body is larger than {config.max_body_bytes} bytes (HOLM_MAX_BODY_BYTES)"


@web.middleware
async def errors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except Exception as exc:
        return error_response(exc, request)


@web.middleware
async def guards_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """On every declared route that takes a token, in this order: the Host names this
    server, the request does not come from a page of another origin, the bearer token
    (`HOLM_SERVER_TOKEN` or the generated one, or a workspace's key; the scheduled-work
    routes also take `CRON_SECRET`), a body is JSON, and a workspace names only its own
    boxes."""
    route = route_of(request)
    if route is not None and route.auth != "none":
        access = request.app[ACCESS]
        check_host(request, access)
        check_same_origin(request, access)
        workspaces = request.app[WORKSPACES]
        given = _bearer(request)
        if given and given.startswith(KEY_PREFIX) and workspaces.workspace_of(given) is None:
            # Made through another holmd a moment ago (replicas): look again, at most
            # twice a second whatever keys are sent.
            # With the database down the keys known here decide, as with one holmd.
            with contextlib.suppress(HolmError):
                await workspaces.refresh(at_most_every=0.5)
        caller = caller_by_bearer(request, route, access, workspaces)
        request[CALLER] = caller
        check_content_type(request, route.accepts)
        check_boxes(request, caller)
    return await handler(request)


def check_host(request: web.Request, access: Access) -> None:
    """A page on a name its author controls, once that name resolves to 127.0.0.1 (DNS
    rebinding), is same-origin with this server in the browser's eyes; its requests still
    carry that name as their Host."""
    given = request.headers.get("Host")
    if given is None or access.any_host:
        # HTTP/1.0 without a Host: no browser sends that.
        return
    parsed = host_and_port(given)
    if parsed is not None:
        name, port = parsed
        if name in access.host_names:
            return
        here = request.transport.get_extra_info("sockname") if request.transport else None
        if isinstance(here, tuple) and len(here) >= 2:
            address, listening = str(here[0]).lower(), int(here[1])
            default_port = 443 if request.scheme == "https" else 80
            ours = is_loopback(name) or name == address
            if ours and (port if port is not None else default_port) == listening:
                return
    log.warning(
        "refused %s %s: Host %r does not name this server", request.method, request.path, given
    )
    raise MisdirectedHost(
        f"Host {given!r} does not name this server: use 127.0.0.1, localhost or [::1] with "
        "its port, HOLM_PUBLIC_URL's host, or add the name to HOLM_ALLOWED_HOSTS"
    )


def check_same_origin(request: web.Request, access: Access) -> None:
    """What a browser says of a request it sends: `Sec-Fetch-Site` (every current
    browser), else `Origin` (sent on every POST, PUT, PATCH and DELETE, and on cross-origin
    reads). A page of another site, or of another port of the same host, is refused."""
    site = request.headers.get("Sec-Fetch-Site", "").strip().lower()
    origin = request.headers.get("Origin")
    if site in ("cross-site", "same-site"):
        why = f"Sec-Fetch-Site: {site}"
    elif origin is not None and not _is_own_origin(origin, request, access):
        why = f"Origin {origin!r} is not this server's"
    else:
        return
    log.warning("refused %s %s from a browser: %s", request.method, request.path, why)
    raise CrossSite(
        f"refused a request from a web page of another origin ({why}): holmd's API is for "
        "programs, not for pages"
    )


def _is_own_origin(origin: str, request: web.Request, access: Access) -> bool:
    given = origin_of(origin)
    if given is None:
        # `null`: a sandboxed frame, a file or a data: URL.
        return False
    if given == access.public_origin:
        return True
    own = origin_of(f"{request.scheme}://{request.headers.get('Host', '')}")
    return own is not None and given == own


def caller_by_bearer(
    request: web.Request, route: Route, access: Access, workspaces: Workspaces
) -> Caller:
    """A workspace's key makes the request that workspace's (also with auth off, so that
    a workspace sees what it would see on any server); else the server's token (or, on
    the scheduled-work routes, `CRON_SECRET`) makes it the server's, and with auth off no
    token is needed for that."""
    given = _bearer(request)
    if given is not None and given.startswith(GRANT_PREFIX):
        return _caller_by_grant(request, given, workspaces)
    workspace = workspaces.workspace_of(given) if given else None
    if workspace is not None:
        if route.auth != "token":
            raise ServerOnly(
                f"{request.method} {request.path} takes the server's token, not a workspace's key"
            )
        return Caller(workspace)
    accepted = [access.token]
    if route.auth == "cron":
        accepted.append(access.cron_secret)
    tokens = [token for token in accepted if token]
    if tokens and not _matches(given, tokens):
        raise Unauthorized("a valid bearer token is needed (Authorization: Bearer …)")
    return SERVER


def _caller_by_grant(request: web.Request, given: str, workspaces: Workspaces) -> Caller:
    """A trace page's grant (holm/http/page_grants.py): the caller who read the page, on
    the two routes a grant is for, while the key it was read with is still kept."""
    resource = request.match_info.route.resource
    path = resource.canonical if resource is not None else request.path
    grant = request.app[PAGE_GRANTS].check(
        given, request.method, path, request.match_info.get("id")
    )
    if grant.key_digest is not None and not workspaces.holds(grant.key_digest):
        raise Unauthorized("the key this trace page was read with was removed")
    request[GRANT_USED] = grant
    return SERVER if grant.workspace is None else Caller(grant.workspace)


def caller_key_digest(request: web.Request) -> str | None:
    """The digest of the workspace key a request came with (None: the server's token,
    auth off, or a grant's own caller): what a grant made for it must outlive no longer."""
    used: PageGrant | None = request.get(GRANT_USED)
    if used is not None:
        return used.key_digest
    given = _bearer(request)
    if given is None or request.app[WORKSPACES].workspace_of(given) is None:
        return None
    return digest_of(given)


def _bearer(request: web.Request) -> str | None:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return None
    return given.strip()


def _matches(given: str | None, tokens: list[str]) -> bool:
    if given is None:
        return False
    # Every token is compared, so the time taken does not say which one nearly matched.
    matches = [hmac.compare_digest(given.encode(), token.encode()) for token in tokens]
    return any(matches)


def check_boxes(request: web.Request, caller: Caller) -> None:
    """Each box the path names must be one the caller sees: here, before the route reads
    its body or its query, so that no route can forget it and another workspace's box is
    refused exactly as an absent one is, at the same step and with the same answer."""
    if caller.workspace is None:
        return
    engine = engine_of(request)
    for name in BOX_PARAMETERS:
        box_id = request.match_info.get(name)
        if box_id is not None:
            engine.box_seen_by(box_id, caller.workspace)


def check_content_type(request: web.Request, accepts: str = "application/json") -> None:
    """A body must say the content-type its route takes, `application/json` but for a
    route that takes a file (`POST /v1/traces`: `application/zip`); neither is one a page
    of another origin can send without asking first (CORS). A request without a body (no
    length, or length 0) passes whatever its type: clients send `application/octet-stream`
    on an empty POST, and a browser's empty POST is refused by its `Sec-Fetch-Site` or
    `Origin`."""
    if not request.body_exists or request.content_type == accepts:
        return
    declared = request.headers.get("Content-Type")
    said = "no content-type" if declared is None else f"content-type {request.content_type}"
    takes = "JSON bodies" if accepts == "application/json" else "a body"
    raise UnsupportedMediaType(
        f"the body has {said}; holmd takes {takes} (content-type: {accepts})"
    )


@web.middleware
async def body_size_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse a body announced as too large before reading it; a chunked one is stopped by
    the app's `client_max_size` while it is read."""
    config: Config = request.app[CONFIG]
    length = request.content_length
    if length is not None and length > config.max_body_bytes:
        raise TooLarge(
            f"the body is larger than {config.max_body_bytes} bytes (HOLM_MAX_BODY_BYTES)"
        )
    return await handler(request)
