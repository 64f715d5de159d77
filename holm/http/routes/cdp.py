"""Chrome DevTools for users: `POST …/cdp` makes a short-lived token for one box, and
`/v1/cdp/{token}/json…` and `/v1/cdp/{token}/devtools/…` relay the DevTools HTTP endpoints
and WebSocket to that box's Chromium. The relay reaches the browser only through a stream
the engine opens to the box's DevTools (`Engine.open_stream`: for a box on this host, the
socket its agent serves in its run folder); no DevTools port is reachable outside the box.
The token is the only credential these two routes take (no bearer token, as the spec says),
so it is random (32 bytes), scoped to one box, lives `ttl_secs` at most (one hour by
default, 24 hours at most), and a WebSocket opened with it is closed when it expires. An
unknown and an expired token get the same `401`. Nothing here is recorded: a DevTools
session is the user's own, outside the trace (docs/security.md)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import msgspec
from aiohttp import web
from aiohttp.client_proto import ResponseHandler

from holm.engine import Engine
from holm.errors import BadCredential, Transport, Unavailable
from holm.streams import Stream, splice, stream_pair
from holm.wire.api import CdpAddress, CdpQuery

from ..routing import Route, engine_of, json_response, public_base, query_of
from ..socket_relay import relay_sockets

HTTP_TIMEOUT = aiohttp.ClientTimeout(total=30)
# What the relay holds of the box's answers, which the box may make as large as it likes:
# an HTTP answer (Chromium's largest, `/json/protocol`, is 1.6 MB) and a WebSocket message
# (Playwright's own limit), each whole in holmd's memory before it is passed on.
MAX_JSON_BYTES = 16 << 20
MAX_MESSAGE = 256 << 20
_NO_SNIFF = {"X-Content-Type-Options": "nosniff"}
# A DevTools address in an answer's address fields: whatever host the box names (its
# Chromium says 127.0.0.1; a hostile box may name any other, which a client would then
# connect to). Only those fields: a page's own URL may hold `ws=…/` too.
_BOX_WS = re.compile(r"(wss?://|wss?=)[^/\s\"'&]+/")
_ADDRESS_KEYS = frozenset(
    {"webSocketDebuggerUrl", "devtoolsFrontendUrl", "devtoolsFrontendUrlCompat"}
)


@dataclass(frozen=True)
class Grant:
    box_id: str
    screen: int
    expires_at_ms: int


class Grants:
    """The live tokens of this server (in memory: a restart ends them all)."""

    def __init__(self) -> None:
        self._grants: dict[str, Grant] = {}

    def make(self, box_id: str, screen: int, ttl_secs: int) -> tuple[str, Grant]:
        now = int(time.time() * 1000)
        self._grants = {t: g for t, g in self._grants.items() if g.expires_at_ms > now}
        # The box's id, then the secret part: with replicas, any holmd sends a request on
        # to the holmd that runs the box and made the token (http/forwarding.py), which
        # checks it; the id tells nothing its holder does not know.
        token = f"{box_id}.{secrets.token_urlsafe(32)}"
        grant = Grant(box_id, screen, now + ttl_secs * 1000)
        self._grants[token] = grant
        return token, grant

    def get(self, token: str) -> Grant:
        grant = self._grants.get(token)
        if grant is None or grant.expires_at_ms <= int(time.time() * 1000):
            self._grants.pop(token, None)
            # The token is the credential: a wrong one is a wrong credential (401), the
            # same for one that never was and one that expired.
            raise BadCredential("no such DevTools address (unknown or expired token)")
        return grant


# The app's live DevTools tokens, made with the app (as its viewer tickets are).
GRANTS = web.AppKey("cdp_grants", Grants)


def _grants(request: web.Request) -> Grants:
    return request.app[GRANTS]


class _StreamConnector(aiohttp.BaseConnector):
    """aiohttp's connections made over streams the engine opens into the box (one a
    connection), never to an address: whatever a box names, the relay reaches only its
    own DevTools. aiohttp takes a socket, so each stream is spliced to one end of a
    socket pair."""

    def __init__(self, open_stream: Callable[[], Awaitable[Stream]]) -> None:
        super().__init__(force_close=True)
        self._open_stream = open_stream
        self._splices: set[asyncio.Task[None]] = set()

    async def _create_connection(
        self, req: Any, traces: Any, timeout: aiohttp.ClientTimeout
    ) -> ResponseHandler:
        box = await self._open_stream()
        try:
            ours, theirs = await stream_pair()
        except BaseException:
            box[1].close()
            raise
        task = asyncio.ensure_future(splice(ours, box))
        self._splices.add(task)
        task.add_done_callback(self._splices.discard)
        _, proto = await self._loop.create_unix_connection(self._factory, sock=theirs)
        return proto

    async def close(self, *, abort_ssl: bool = False) -> None:
        await super().close()
        for task in list(self._splices):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


@contextlib.asynccontextmanager
async def _session(engine: Engine, grant: Grant) -> AsyncIterator[aiohttp.ClientSession]:
    """A session whose every connection is a stream to the box's DevTools."""

    async def open_stream() -> Stream:
        try:
            return await engine.open_stream(grant.box_id, "devtools", grant.screen)
        except Transport as exc:
            raise Unavailable(f"the box's DevTools did not answer: {exc.message}") from None

    async with aiohttp.ClientSession(connector=_StreamConnector(open_stream)) as session:
        yield session


async def _devtools_json(
    engine: Engine, grant: Grant, method: str, path: str
) -> tuple[int, bytes, str]:
    try:
        async with (
            _session(engine, grant) as session,
            session.request(method, "http://localhost" + path, timeout=HTTP_TIMEOUT) as r,
        ):
            body = bytearray()
            async for chunk in r.content.iter_any():
                body += chunk
                if len(body) > MAX_JSON_BYTES:
                    raise Unavailable(f"the box's DevTools answered over {MAX_JSON_BYTES} bytes")
            return r.status, bytes(body), r.content_type
    except (aiohttp.ClientError, OSError) as exc:
        raise Unavailable(f"the box's DevTools did not answer: {exc}") from None


def _prefix(request: web.Request, token: str) -> tuple[bool, str]:
    """Whether clients reach this relay over TLS, and its address without the scheme: on
    `HOLM_PUBLIC_URL` (a server behind a TLS proxy), else where the request came in."""
    base = urlsplit(public_base(request))
    return base.scheme == "https", f"{base.netloc}{base.path}/v1/cdp/{token}"


def _relayed(request: web.Request, token: str, address: str) -> str:
    """A DevTools address made this relay's: no address inside the box, nor any other a box
    names, reaches the client."""
    tls, prefix = _prefix(request, token)
    ws = "wss" if tls else "ws"

    def ours(found: re.Match[str]) -> str:
        scheme = f"{ws}=" if found.group(1).endswith("=") else f"{ws}://"
        return f"{scheme}{prefix}/"

    return _BOX_WS.sub(ours, address)


def _relayed_json(request: web.Request, token: str, body: bytes) -> str:
    """A DevTools JSON answer with its address fields made this relay's (`_relayed`); an
    answer that is no JSON as it came (it goes out as plain text)."""

    def mend(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                key: _relayed(request, token, item)
                if key in _ADDRESS_KEYS and isinstance(item, str)
                else mend(item)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [mend(item) for item in value]
        return value

    try:
        decoded = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return body.decode(errors="replace")
    return msgspec.json.encode(mend(decoded)).decode()


async def make_address(request: web.Request) -> web.Response:
    box_id = request.match_info["id"]
    q = query_of(request, CdpQuery)
    engine = engine_of(request)
    # Not a token yet: the stream's guards (a ready box, a runtime with DevTools) first.
    probe = Grant(box_id, q.screen, 0)
    status, body, _ = await _devtools_json(engine, probe, "GET", "/json/version")
    if status != 200:
        raise Unavailable(f"the box's DevTools answered {status}")
    try:
        version = msgspec.json.decode(body)
    except msgspec.DecodeError:
        version = None
    browser_ws = version.get("webSocketDebuggerUrl") if isinstance(version, dict) else None
    if not isinstance(browser_ws, str):
        raise Unavailable("the box's DevTools gave no browser address")
    # Only once the box's DevTools answers: a refusal leaves no live token behind.
    token, grant = _grants(request).make(box_id, probe.screen, q.ttl_secs)
    ws_url = _relayed(request, token, browser_ws)
    tls, prefix = _prefix(request, token)
    address = CdpAddress(
        url=f"{'https' if tls else 'http'}://{prefix}",
        ws_url=ws_url,
        expires_at_ms=grant.expires_at_ms,
    )
    return json_response(address)


async def relay_json(request: web.Request) -> web.Response:
    token = request.match_info["token"]
    grant = _grants(request).get(token)
    rest = request.match_info.get("rest", "")
    path = "/json" + (f"/{rest}" if rest else "")
    if request.query_string:
        path += "?" + request.query_string
    engine = engine_of(request)
    status, body, content_type = await _devtools_json(engine, grant, request.method, path)
    # The addresses DevTools gives are inside the box: they become this relay's.
    text = _relayed_json(request, token, body)
    # JSON, or else plain text, never as the box says: this answer is on holmd's own
    # origin, where a page's script (a box may serve anything on its socket) would call
    # the API as the server's own page.
    kind = "application/json" if content_type == "application/json" else "text/plain"
    return web.Response(text=text, status=status, content_type=kind, headers=_NO_SNIFF)


async def relay_socket(request: web.Request) -> web.WebSocketResponse:
    grant = _grants(request).get(request.match_info["token"])
    path = "/devtools/" + request.match_info["rest"]
    remaining = grant.expires_at_ms / 1000 - time.time()
    async with _session(engine_of(request), grant) as session:
        try:
            upstream = await session.ws_connect("http://localhost" + path, max_msg_size=MAX_MESSAGE)
        except (aiohttp.ClientError, OSError) as exc:
            raise Unavailable(f"the box's DevTools did not answer: {exc}") from None
        client = web.WebSocketResponse(max_msg_size=MAX_MESSAGE)
        await client.prepare(request)

        # The session ends when either side closes, or when the token expires.
        await relay_sockets(client, upstream, timeout=max(0.0, remaining))
    return client


BOX = "/v1/boxes/{id}"

ROUTES = [
    Route(
        "POST",
        f"{BOX}/cdp",
        make_address,
        "Make a DevTools address with a short-lived token",
        query=CdpQuery,
        response=CdpAddress,
    ),
    # "any" method (rest-api.md): the box's Chromium says which each endpoint takes (PUT
    # for `/json/new`). No OPTIONS: no route here answers a CORS preflight.
    *(
        Route(method, path, relay_json, "The DevTools HTTP endpoints, relayed", auth="none")
        for method in ("GET", "PUT", "POST", "DELETE", "PATCH")
        for path in ("/v1/cdp/{token}/json", "/v1/cdp/{token}/json/{rest:.*}")
    ),
    Route(
        "GET",
        "/v1/cdp/{token}/devtools/{rest:.*}",
        relay_socket,
        "The DevTools WebSocket, relayed",
        auth="none",
    ),
]
