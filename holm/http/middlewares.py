"""The middlewares every request passes, outermost first: errors (every failure becomes the
error body with its code and status), guards (who may call: the bearer token), body size.

Choices the spec leaves open (docs/api.md says them too):
- A missing or wrong token: `401` with code `denied` (and `WWW-Authenticate: Bearer`).
- A known path with a method it does not have: `405` with code `bad_request` and `Allow`.
- A body over `HOLM_MAX_BODY_BYTES`: `413` with code `bad_request`.

The routes that take no token (health, the OpenAPI document, the ticket routes of viewers
and DevTools) pass no guard: they change nothing, or a ticket authorises them.
"""

from __future__ import annotations

import hmac
import logging

from aiohttp import web
from aiohttp.typedefs import Handler

from holm.config import Config
from holm.errors import BadRequest, Denied, ErrorBody, HolmError, Internal, NotFound

from .access import Access
from .routing import ACCESS, CONFIG, Route, json_response, route_of

log = logging.getLogger(__name__)


class Unauthorized(Denied):
    status = 401
    retryable_default = False


class MethodNotAllowed(BadRequest):
    status = 405


class TooLarge(BadRequest):
    status = 413


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
        headers["WWW-Authenticate"] = "Bearer"
    body = ErrorBody(code=exc.code, message=exc.message, retryable=exc.retryable)
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
    """On every declared route that takes a token: the bearer token (`HOLM_SERVER_TOKEN`
    or the generated one; the scheduled-work routes also take `CRON_SECRET`)."""
    route = route_of(request)
    if route is not None and route.auth != "none":
        access = request.app[ACCESS]
        check_bearer(request, route, access)
    return await handler(request)


def check_bearer(request: web.Request, route: Route, access: Access) -> None:
    accepted = [access.token]
    if route.auth == "cron":
        accepted.append(access.cron_secret)
    tokens = [token for token in accepted if token]
    if tokens and not _bearer_matches(request, tokens):
        raise Unauthorized("a valid bearer token is needed (Authorization: Bearer …)")


def _bearer_matches(request: web.Request, tokens: list[str]) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given:
        return False
    # Every token is compared, so the time taken does not say which one nearly matched.
    matches = [hmac.compare_digest(given.strip().encode(), token.encode()) for token in tokens]
    return any(matches)


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
