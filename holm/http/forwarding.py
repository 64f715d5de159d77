"""Replicas (docs/scale.md): a request for a box another holmd owns is sent on to that
holmd, and the list of boxes is every holmd's; the client never needs to know which holmd
it reached.

- A request whose path names a box (`/v1/boxes/{id}/…`, or a DevTools token's
  `/v1/cdp/{box}.{secret}/…`) that this holmd does not run, and
  whose lease another live holmd holds (holm/events/leases.py), is forwarded to that
  holmd's URL: method, path, query, headers and body as they came, the answer streamed
  back as it goes. Nearly every request (no body, or one up to `REPLAYABLE`) goes over a
  kept-alive connection of owner_links.py, as the client's own bytes; a large body
  streams through aiohttp's client; a WebSocket (viewers, raw streams) is relayed
  message by message. The
  owner checks the bearer token and every guard itself, so a workspace's key works
  through any holmd; this holmd checks the Host and the browser's origin first, as it
  would for its own routes (DNS rebinding). `x-holm-forwarded-by` marks a forwarded
  request: it is never forwarded again.
- `GET /v1/boxes` answers this holmd's boxes and those each other live holmd answers.
- An owner that does not answer (it just died; its lease runs out within
  `HOLM_LEASE_MS`, and another holmd then takes the box over), or that is gone while no
  other holmd has taken the box over yet, is `503 unavailable`, retryable.

Without a postgres store there is one holmd and this passes every request through.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

import aiohttp
import msgspec
from aiohttp import web
from aiohttp.typedefs import Handler
from multidict import CIMultiDict, CIMultiDictProxy

from holm.errors import BadCredential, BadRequest, Denied, Gone, HolmError, NotFound, Unavailable
from holm.events.leases import Replica
from holm.wire.api import BoxList

from .idempotency import HEADER as IDEMPOTENCY_HEADER
from .middlewares import MisdirectedHost, check_host, check_same_origin, error_response
from .owner_links import LinkFailed, OwnerLinks, Target
from .routing import ACCESS, ENGINE, json_response, route_of
from .socket_relay import relay_sockets

if TYPE_CHECKING:
    from holm.engine.ownership import Ownership

log = logging.getLogger(__name__)

FORWARDED_BY = "x-holm-forwarded-by"
# On a 421 to a forwarded request: this holmd does not run the box; the value is the
# replica whose lease it is now.
NOT_MINE = "x-holm-not-mine"
# A body up to this size is read before it is sent on (so it can be sent again).
REPLAYABLE = 1 << 20
SESSION = web.AppKey("replica_session", aiohttp.ClientSession)
LINKS = web.AppKey("owner_links", OwnerLinks)
# Headers of one hop (RFC 9110 §7.6.1), and those the client library sets itself.
_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
}
# As bytes, for the lean path's raw header lines; `expect` too: the body is sent at once
# (this holmd answered the client's `100-continue` itself).
_LEAN_HOP = frozenset(name.encode() for name in _HOP | {"expect"})
_FORWARDED_BY = FORWARDED_BY.encode()
_WS_HOP = _HOP | {
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-extensions",
    "sec-websocket-protocol",
}
_MAX_MESSAGE = 64 * 1024 * 1024
# A refused WebSocket handshake tells its status only: the same error here.
REFUSALS: dict[int, type[HolmError]] = {
    401: BadCredential,
    404: NotFound,
    409: Denied,
    410: Gone,
    503: Unavailable,
}
_box_list = msgspec.json.Decoder(BoxList)


@web.middleware
async def forwarding_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    engine = request.app[ENGINE]
    ownership = engine.ownership
    if ownership is None:
        return await handler(request)
    box_id = _box_named(request)
    if box_id is not None and box_id in ownership.adopting:
        raise taking_over(box_id)
    if FORWARDED_BY in request.headers:
        if box_id is not None and engine.journal.state(box_id) is None:
            holder = await ownership.leases.holder(box_id)
            if holder is not None and holder.owner != ownership.me:
                # The forwarding holmd's idea of the owner is old: it looks again.
                misdirected = MisdirectedHost(f"box {box_id} is run by holmd {holder.owner}")
                answer = error_response(misdirected, request)
                answer.headers[NOT_MINE] = holder.owner
                return answer
        return await handler(request)
    if request.method == "GET" and request.path == "/v1/boxes":
        return await _every_replicas_boxes(request, handler)
    if box_id is None or engine.answers_here(box_id):
        return await handler(request)
    holder = await ownership.holder(box_id)
    if holder is None or holder.owner == ownership.me:
        return await handler(request)
    route = route_of(request)
    if route is None or route.auth != "none":
        check_host(request, request.app[ACCESS])
        check_same_origin(request, request.app[ACCESS])
    # A small body is read once, so that a request the owner sends back can go again; a
    # large one (an upload) streams through as it comes.
    body: bytes | aiohttp.StreamReader | None = None
    if request.body_exists:
        small = request.content_length is not None and request.content_length <= REPLAYABLE
        body = await request.read() if small else request.content
    for _ in range(2):
        if holder is None or holder.owner == ownership.me:
            return await handler(request)
        if holder.replica is None:
            # Its holmd stopped and no other has taken the box over yet
            # (engine/ownership.py): one will within a lease, so a retry finds it.
            raise taking_over(box_id)
        try:
            if isinstance(body, bytes | None) and _lean(request):
                return await forward_lean(request, holder.replica, ownership.me, body)
            return await forward(request, holder.replica, ownership.me, body)
        except Unavailable:
            ownership.drop_holder(box_id)
            raise
        except _NotMine:
            ownership.drop_holder(box_id)
            if not isinstance(body, bytes | None):
                break
            holder = await ownership.holder(box_id)
    raise taking_over(box_id)


class _NotMine(Exception):
    """The holmd a request was sent to does not run the box (its lease moved)."""


def _box_named(request: web.Request) -> str | None:
    """The box a request is for: the `{id}` of a box's routes, or the box a DevTools
    token was made for (`/v1/cdp/{box}.{secret}/…`, routes/cdp.py)."""
    if request.path.startswith("/v1/boxes/"):
        return request.match_info.get("id")
    if request.path.startswith("/v1/cdp/"):
        box, dot, _ = request.match_info.get("token", "").partition(".")
        return box if dot and box else None
    return None


def _lean(request: web.Request) -> bool:
    """Whether owner_links.py sends the request on: all but a WebSocket (relayed message
    by message), a HEAD (whose answer's length is not its body's), and a body too large
    to read first (streamed through aiohttp's client, `forward`)."""
    return request.method != "HEAD" and "Upgrade" not in request.headers


async def forward_lean(
    request: web.Request, owner: Replica, me: str, body: bytes | None
) -> web.StreamResponse:
    """The request as the owner answers it, over a kept-alive connection of
    owner_links.py: `body` is the request's, read whole."""
    links = request.app[LINKS]
    target = links.target(owner.url)
    sent = _request_bytes(request, target, me, body)
    # Sent again on a fresh connection only if a second copy cannot change anything.
    again = IDEMPOTENCY_HEADER in request.headers or (
        request.method == "GET" and not request.path.startswith("/v1/cdp/")
    )
    streamed: web.StreamResponse | None = None
    try:
        async with links.exchange(target, sent, again=again) as reply:
            if reply.status == 421 and NOT_MINE in reply.headers:
                async for _ in reply.pieces():
                    pass
                raise _NotMine()
            headers = CIMultiDict((k, v) for k, v in reply.headers.items() if k.lower() not in _HOP)
            if reply.length is not None and reply.length <= REPLAYABLE:
                data = await reply.read()
                return web.Response(
                    status=reply.status, reason=reply.reason, headers=headers, body=data
                )
            # A large answer (a file, a recording) or one of no known length: as it comes.
            streamed = web.StreamResponse(status=reply.status, reason=reply.reason, headers=headers)
            if reply.length is not None:
                streamed.content_length = reply.length
            await streamed.prepare(request)
            async for piece in reply.pieces():
                await streamed.write(piece)
            await streamed.write_eof()
            return streamed
    except LinkFailed as exc:
        if streamed is not None and streamed.prepared:
            # The answer has begun: the client must see it cut short, not ended.
            if request.transport is not None:
                request.transport.close()
            return streamed
        raise unreachable(owner, exc) from None


def _request_bytes(request: web.Request, target: Target, me: str, body: bytes | None) -> bytes:
    """The request as the client sent it (its method, its raw path and query, its header
    lines as they came, which this holmd's parser checked), less the hop's headers, to
    the owner's address; `body` with its length."""
    path = target.prefix + request.raw_path.encode("utf-8", "surrogateescape")
    lines = [b"%s %s HTTP/1.1\r\nHost: %s\r\n" % (request.method.encode(), path, target.authority)]
    lines.extend(
        b"%s: %s\r\n" % (name, value)
        for name, value in request.raw_headers
        if name.lower() not in _LEAN_HOP
    )
    lines.append(b"%s: %s\r\n" % (_FORWARDED_BY, me.encode()))
    if body is not None:
        lines.append(b"Content-Length: %d\r\n\r\n" % len(body))
        lines.append(body)
    elif "Content-Length" in request.headers:
        lines.append(b"Content-Length: 0\r\n\r\n")
    else:
        lines.append(b"\r\n")
    return b"".join(lines)


async def forward(
    request: web.Request,
    owner: Replica,
    me: str,
    body: bytes | aiohttp.StreamReader | None,
) -> web.StreamResponse:
    """The request as the owner answers it: `body` is the request's, read or streaming."""
    url = owner.url.rstrip("/") + request.path_qs
    if request.headers.get("Upgrade", "").lower() == "websocket":
        return await _relay_socket(request, url, me)
    headers = _outgoing(request.headers, _HOP, me)
    if isinstance(body, aiohttp.StreamReader) and request.content_length is not None:
        # Sent as it came, not chunked.
        headers["Content-Length"] = str(request.content_length)
    session = request.app[SESSION]
    try:
        upstream = await session.request(
            request.method, url, headers=headers, data=body, allow_redirects=False
        )
    except (aiohttp.ClientError, OSError) as exc:
        raise unreachable(owner, exc) from None
    try:
        if upstream.status == 421 and NOT_MINE in upstream.headers:
            raise _NotMine()
        answer_headers = CIMultiDict(
            (k, v) for k, v in upstream.headers.items() if k.lower() not in _HOP
        )
        if upstream.content_length is not None:
            data = await upstream.read()
            return web.Response(status=upstream.status, headers=answer_headers, body=data)
        streamed = web.StreamResponse(status=upstream.status, headers=answer_headers)
        await streamed.prepare(request)
        async for chunk in upstream.content.iter_any():
            await streamed.write(chunk)
        await streamed.write_eof()
        return streamed
    except (aiohttp.ClientError, OSError) as exc:
        raise unreachable(owner, exc) from None
    finally:
        upstream.release()


async def _relay_socket(request: web.Request, url: str, me: str) -> web.StreamResponse:
    protocols = [
        p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()
    ]
    session = request.app[SESSION]
    try:
        upstream = await session.ws_connect(
            url,
            headers=_outgoing(request.headers, _WS_HOP, me),
            protocols=protocols,
            max_msg_size=_MAX_MESSAGE,
            compress=0,
        )
    except aiohttp.WSServerHandshakeError as exc:
        # The owner refused (a bad ticket, an absent box): as it would have here.
        refused = f"the holmd that runs this box refused: {exc.status} {exc.message}"
        raise REFUSALS.get(exc.status, BadRequest)(refused) from None
    except (aiohttp.ClientError, OSError) as exc:
        raise Unavailable(f"the holmd that runs this box did not answer: {exc}") from None
    client = web.WebSocketResponse(
        protocols=[upstream.protocol] if upstream.protocol else (),
        max_msg_size=_MAX_MESSAGE,
        compress=False,
    )
    await client.prepare(request)
    await relay_sockets(client, upstream)
    return client


async def _every_replicas_boxes(request: web.Request, handler: Handler) -> web.StreamResponse:
    """This holmd's boxes and each other live holmd's (`with_others`)."""
    mine = await handler(request)
    if mine.status != 200 or not isinstance(mine, web.Response) or mine.body is None:
        return mine
    ownership = request.app[ENGINE].ownership
    assert ownership is not None and isinstance(mine.body, bytes)
    headers = _outgoing(request.headers, _HOP, ownership.me)
    session = request.app[SESSION]

    async def listed(replica: Replica) -> BoxList | None:
        try:
            async with session.get(
                replica.url.rstrip("/") + request.path_qs, headers=headers
            ) as answer:
                if answer.status != 200:
                    return None
                return _box_list.decode(await answer.read())
        except (aiohttp.ClientError, OSError, msgspec.DecodeError) as exc:
            log.info("replica %s did not list its boxes: %s", replica.id, exc)
            return None

    own = _box_list.decode(mine.body)
    every = await with_others(ownership, own, listed)
    return mine if every is own else json_response(every)


async def with_others(
    ownership: Ownership,
    mine: BoxList,
    listed: Callable[[Replica], Awaitable[BoxList | None]],
) -> BoxList:
    """`mine` and the boxes each other live holmd lists (`listed`: None when it does not
    answer, and it is left out: its boxes are taken over within a lease, then listed
    again), oldest first; `mine` itself when there is no other."""
    try:
        others = await ownership.leases.others()
    except Unavailable as exc:
        # The database is down: this holmd's own boxes, as one holmd answers then.
        log.info("listing this holmd's boxes only: %s", exc)
        return mine
    if not others:
        return mine
    boxes = list(mine.boxes)
    seen = {box.id for box in boxes}
    for answer in await asyncio.gather(*(listed(replica) for replica in others)):
        for box in answer.boxes if answer is not None else []:
            if box.id not in seen:
                seen.add(box.id)
                boxes.append(box)
    boxes.sort(key=lambda box: (box.created_at_ms, box.id))
    return BoxList(boxes=boxes)


def _outgoing(headers: CIMultiDictProxy[str], drop: set[str], me: str) -> CIMultiDict[str]:
    kept: CIMultiDict[str] = CIMultiDict(
        (k, v) for k, v in headers.items() if k.lower() not in drop
    )
    kept[FORWARDED_BY] = me
    return kept


def taking_over(box_id: str) -> Unavailable:
    return Unavailable(f"box {box_id} is being taken over from a holmd that stopped; retry shortly")


def unreachable(owner: Replica, exc: BaseException) -> Unavailable:
    return Unavailable(
        f"the holmd that runs this box ({owner.id}) did not answer ({type(exc).__name__}); "
        "another takes its boxes over once its lease runs out"
    )


async def replica_session(app: web.Application) -> AsyncIterator[None]:
    """The client this holmd forwards with: one pool of kept-alive connections per other
    holmd, with no cap (aiohttp's default of 100 in all would queue the requests of many
    clients behind each other: each client's own connection to this holmd already
    bounds how many are under way), each kept a minute after its last request so that
    a client's next click finds it open."""
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=60),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=5),
        auto_decompress=False,
    )
    app[SESSION] = session
    links = app[LINKS] = OwnerLinks()
    yield
    await links.close()
    await session.close()


__all__ = [
    "FORWARDED_BY",
    "LINKS",
    "NOT_MINE",
    "REFUSALS",
    "SESSION",
    "forward",
    "forward_lean",
    "forwarding_middleware",
    "replica_session",
    "taking_over",
    "unreachable",
    "with_others",
]
