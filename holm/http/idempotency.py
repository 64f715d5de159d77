"""`idempotency-key` on the routes that take it (create, actions, fork): the same key with
the same body answers the first result (status and body) and does not do the work again,
also while the first request is still running (the second waits for it); the same key with
another body is refused with `409 denied`.

With replicas (a postgres store, docs/scale.md) keys live in PostgreSQL instead, so that
a retry that reaches another holmd replays the same answer (holm/events/shared_keys.py).

Keys live in memory (the spec says so), per caller (a workspace's key, or the server's
token) and route (method and path), for a day, at most
10,000 of them (the oldest go first). A result with a 5xx status is not kept, so that a
retry after a server or runtime failure can succeed; requests already waiting on it get it.
Bodies are compared as canonical JSON, so key order and spacing do not matter.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass

import msgspec
from aiohttp import web
from aiohttp.typedefs import Handler

from holm.errors import Denied, HolmError
from holm.events.shared_keys import Kept, SharedKeys, scope_name
from holm.wire.spec import canonical_json

from .middlewares import error_response
from .routing import ENGINE, caller_of, route_of

log = logging.getLogger(__name__)

HEADER = "idempotency-key"
# How often a request waits to look again at a key another holmd's request holds.
SHARED_POLL_SECS = 0.05
KEEP_SECS = 24 * 3600
MAX_KEYS = 10_000


# The caller's workspace ("" for the server), the method, the path, the key.
Scope = tuple[str, str, str, str]


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    content_type: str
    headers: tuple[tuple[str, str], ...]

    def response(self) -> web.Response:
        response = web.Response(status=self.status, body=self.body, content_type=self.content_type)
        response.headers.extend(self.headers)
        response.headers["Idempotent-Replayed"] = "true"
        return response


@dataclass
class _Key:
    digest: str
    made: float
    answer: asyncio.Future[Answer]


class KeyCache:
    def __init__(self, keep_secs: float = KEEP_SECS, max_keys: int = MAX_KEYS) -> None:
        self.keep_secs = keep_secs
        self.max_keys = max_keys
        self._keys: OrderedDict[Scope, _Key] = OrderedDict()

    def get(self, scope: Scope) -> _Key | None:
        found = self._keys.get(scope)
        if found is not None and time.monotonic() - found.made > self.keep_secs:
            del self._keys[scope]
            return None
        return found

    def begin(self, scope: Scope, digest: str) -> _Key:
        key = _Key(digest, time.monotonic(), asyncio.get_running_loop().create_future())
        self._keys[scope] = key
        while len(self._keys) > self.max_keys:
            self._keys.popitem(last=False)
        return key

    def drop(self, scope: Scope, key: _Key) -> None:
        if self._keys.get(scope) is key:
            del self._keys[scope]


KEYS = web.AppKey("idempotency_keys", KeyCache)


def body_digest(raw: bytes) -> str:
    try:
        canonical = canonical_json(msgspec.json.decode(raw or b"{}"))
    except msgspec.DecodeError:
        canonical = raw
    return hashlib.sha256(canonical).hexdigest()


@web.middleware
async def idempotency_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    name = request.headers.get(HEADER)
    route = route_of(request)
    if not name or route is None or not route.idempotent:
        return await handler(request)
    cache = request.app[KEYS]
    # Two workspaces that pick the same key make two boxes: one never gets the other's.
    scope = (caller_of(request).workspace or "", request.method, request.path, name)
    digest = body_digest(await request.read())
    ownership = request.app[ENGINE].ownership
    if ownership is not None:
        return await _shared(request, handler, ownership.keys, scope, digest)
    found = cache.get(scope)
    if found is not None:
        if found.digest != digest:
            raise Denied(
                f"idempotency-key {name!r} was used on this route with another body;"
                " use a new key for a new request",
                retryable=False,
            )
        return (await asyncio.shield(found.answer)).response()
    key = cache.begin(scope, digest)
    try:
        try:
            response = await handler(request)
        except Exception as exc:
            response = error_response(exc, request)
    except BaseException:
        cache.drop(scope, key)
        key.answer.cancel()
        raise
    if not isinstance(response, web.Response) or not isinstance(response.body, bytes):
        # Not a body that can be kept (a stream): the key does not hold it.
        cache.drop(scope, key)
        key.answer.cancel()
        return response
    answer = Answer(
        status=response.status,
        body=response.body,
        content_type=response.content_type,
        headers=tuple((k, v) for k, v in response.headers.items() if k.lower() == "location"),
    )
    key.answer.set_result(answer)
    if answer.status >= 500:
        cache.drop(scope, key)
    return response


def _reused(name: str) -> Denied:
    return Denied(
        f"idempotency-key {name!r} was used on this route with another body;"
        " use a new key for a new request",
        retryable=False,
    )


async def _shared(
    request: web.Request, handler: Handler, keys: SharedKeys, scope: Scope, digest: str
) -> web.StreamResponse:
    """The same as the memory cache, on PostgreSQL's rows (events/shared_keys.py)."""
    row = scope_name(*scope)
    while True:
        found = await keys.begin(row, digest)
        if found.digest != digest:
            raise _reused(scope[3])
        if found.kept is not None:
            return Answer(
                found.kept.status,
                found.kept.body,
                found.kept.content_type,
                tuple(found.kept.headers),
            ).response()
        if found.state == "mine":
            break
        await asyncio.sleep(SHARED_POLL_SECS)
    try:
        try:
            response = await handler(request)
        except Exception as exc:
            response = error_response(exc, request)
    except BaseException:
        with contextlib.suppress(HolmError):
            await asyncio.shield(keys.drop(row))
        raise
    if (
        not isinstance(response, web.Response)
        or not isinstance(response.body, bytes)
        or response.status >= 500
    ):
        with contextlib.suppress(HolmError):
            await keys.drop(row)
        return response
    headers = [(k, v) for k, v in response.headers.items() if k.lower() == "location"]
    kept = Kept(response.status, response.content_type, headers, response.body)
    try:
        await keys.keep(row, kept)
    except HolmError as exc:
        # The work is done: its answer goes back, the key is not kept (a retry redoes it).
        log.warning("an idempotent answer was not kept: %s", exc)
        with contextlib.suppress(HolmError):
            await keys.drop(row)
    return response
