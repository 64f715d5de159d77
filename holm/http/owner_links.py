"""Kept-alive connections to the other holmd, for the requests forwarding sends most (a
click, a status, a screenshot: a small body, an answer of known length), written and read
here as HTTP/1.1 bytes over asyncio streams (docs/scale.md#replicas).

An aiohttp client request costs a forwarding holmd about as much processor time as the
owner's whole answer to a click (its header multidicts, its response parser and objects,
its connection pool's bookkeeping); here a request is one write of bytes built from the
client's own (`raw_headers`, `raw_path`: what the client sent, which the forwarding
holmd's parser already checked), and its answer one read of a head and one of a body.

- One exchange at a time on a connection (no pipelining). Idle ones are kept per replica
  URL for `IDLE_SECS`, below the keep-alive of the owner's aiohttp server (75 s), so the
  owner never closes one that is idle here; one it closed anyway (it restarted) reads as
  ended and is dropped before a request is written on it.
- A reused connection that ends before any byte of an answer came is tried once more on a
  fresh one, but only when the caller says sending twice is harmless (`again`: a GET, a
  PUT, or a request with an idempotency key, which the owner answers once): a click is
  never sent twice. Anything else is `LinkFailed`.
- An answer with a `content-length` is read whole (`Reply.read`); a chunked one, or one
  that runs until the connection closes, comes in pieces (`Reply.pieces`).
- TCP_NODELAY on every connection (asyncio sets it too), so a small request or answer
  never waits for the acknowledgement of the one before.

Nothing is logged here: no header, no body, no token.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from multidict import CIMultiDict

# Idle connections are closed after this: under aiohttp's server keep-alive (75 s).
IDLE_SECS = 60.0
CONNECT_SECS = 5.0
# The most a reader buffers before it stops reading the socket (flow control), and the
# longest head of an answer it takes.
_LIMIT = 256 * 1024
_PIECE = 64 * 1024
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
# Answers that have no body whatever their headers say (RFC 9110 §6.4.1).
_NO_BODY = frozenset({204, 304})


class LinkFailed(Exception):
    """The owner could not be reached, or its answer ended or was not HTTP."""


@dataclass(frozen=True)
class Target:
    """Where a replica URL points: what the connection dials and the request names."""

    host: str
    port: int
    tls: bool
    authority: bytes  # the Host header
    prefix: bytes  # a path the URL has before the request's own

    @staticmethod
    def of(url: str) -> Target:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or parts.hostname is None:
            raise ValueError(f"not an http(s) URL: {url!r}")
        tls = parts.scheme == "https"
        port = parts.port or (443 if tls else 80)
        authority = parts.netloc.rpartition("@")[2]
        return Target(
            host=parts.hostname,
            port=port,
            tls=tls,
            authority=authority.encode("idna"),
            prefix=parts.path.rstrip("/").encode(),
        )


class _Link:
    """One connection to a replica."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def usable(self) -> bool:
        """Not closed by either end as far as this process has read: no end of stream,
        no error."""
        reader = self.reader
        return not (reader.at_eof() or reader.exception() is not None or self.writer.is_closing())

    def close(self) -> None:
        self.writer.close()


@dataclass
class Reply:
    """An answer's head, its body still on the connection."""

    status: int
    reason: str
    headers: CIMultiDict[str]
    length: int | None  # None: chunked, or until the connection closes
    chunked: bool
    keep_alive: bool
    link: _Link
    done: bool = False

    async def read(self) -> bytes:
        """The whole body of an answer with a length."""
        assert self.length is not None
        try:
            body = await self.link.reader.readexactly(self.length) if self.length else b""
        except (OSError, asyncio.IncompleteReadError) as exc:
            raise LinkFailed(f"the answer ended early ({type(exc).__name__})") from exc
        self.done = True
        return body

    async def pieces(self) -> AsyncIterator[bytes]:
        """The body as it comes, whatever its framing."""
        reader = self.link.reader
        try:
            if self.length is not None:
                left = self.length
                while left:
                    piece = await reader.readexactly(min(left, _PIECE))
                    left -= len(piece)
                    yield piece
            elif self.chunked:
                async for piece in _chunks(reader):
                    yield piece
            else:
                while piece := await reader.read(_PIECE):
                    yield piece
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            raise LinkFailed(f"the answer ended early ({type(exc).__name__})") from exc
        self.done = True


async def _chunks(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while True:
        line = await reader.readuntil(b"\r\n")
        size_text = line[:-2].split(b";", 1)[0].strip()
        if not _HEX.fullmatch(size_text):
            raise LinkFailed("a chunk's size is not hexadecimal")
        size = int(size_text, 16)
        if size == 0:
            # Trailers, if any, up to the empty line: not passed on (none are sent).
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass
            return
        while size:
            piece = await reader.readexactly(min(size, _PIECE))
            size -= len(piece)
            yield piece
        if await reader.readexactly(2) != b"\r\n":
            raise LinkFailed("a chunk does not end with CRLF")


class OwnerLinks:
    """The kept-alive connections of this holmd to the others."""

    def __init__(self) -> None:
        self._idle: dict[Target, list[_Link]] = {}
        self._targets: dict[str, Target] = {}
        self._tls: ssl.SSLContext | None = None
        self._closed = False

    def target(self, url: str) -> Target:
        found = self._targets.get(url)
        if found is None:
            if len(self._targets) > 1000:
                self._targets.clear()
            found = self._targets[url] = Target.of(url)
        return found

    @contextlib.asynccontextmanager
    async def exchange(
        self, target: Target, request: bytes, *, again: bool
    ) -> AsyncIterator[Reply]:
        """Send `request` (its head and body, as bytes) and give the answer's head. The
        connection goes back to the pool once the body has been read whole, and is closed
        otherwise (an error, a cancelled caller, an answer that ends with the
        connection)."""
        reply = await self._send(target, request, again=again)
        try:
            yield reply
        finally:
            # Whatever the caller did after, a body read whole leaves the connection clean.
            if reply.done and reply.keep_alive:
                self._put(target, reply.link)
            else:
                reply.link.close()

    async def _send(self, target: Target, request: bytes, *, again: bool) -> Reply:
        for attempt in range(2):
            # The second try is on a fresh connection: the kept ones may all be as dead.
            link, reused = (
                await self._take(target) if attempt == 0 else (await self._open(target), False)
            )
            try:
                link.writer.write(request)
                await link.writer.drain()
                return await _reply(link)
            except asyncio.IncompleteReadError as exc:
                link.close()
                if reused and again and not exc.partial:
                    # Closed by the owner as the request went: nothing was answered, and
                    # sending it again is harmless.
                    continue
                raise LinkFailed(f"the connection ended ({type(exc).__name__})") from exc
            except OSError as exc:
                link.close()
                if reused and again:
                    continue
                raise LinkFailed(f"the connection failed ({type(exc).__name__})") from exc
            except asyncio.LimitOverrunError as exc:
                link.close()
                raise LinkFailed("the answer's head is too long") from exc
            except BaseException:
                link.close()
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _take(self, target: Target) -> tuple[_Link, bool]:
        """An idle connection that still works (the newest first), or a new one."""
        idle = self._idle.get(target)
        now = time.monotonic()
        while idle:
            link = idle.pop()
            if link.usable() and now - link.idle_since < IDLE_SECS:
                return link, True
            link.close()
        return await self._open(target), False

    async def _open(self, target: Target) -> _Link:
        if self._closed:
            raise LinkFailed("this holmd is stopping")
        tls: ssl.SSLContext | None = None
        if target.tls:
            if self._tls is None:
                self._tls = ssl.create_default_context()
            tls = self._tls
        try:
            async with asyncio.timeout(CONNECT_SECS):
                reader, writer = await asyncio.open_connection(
                    target.host, target.port, ssl=tls, limit=_LIMIT
                )
        except (OSError, TimeoutError) as exc:
            raise LinkFailed(f"no connection ({type(exc).__name__})") from exc
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _Link(reader, writer)

    def _put(self, target: Target, link: _Link) -> None:
        if self._closed:
            link.close()
            return
        now = time.monotonic()
        link.idle_since = now
        self._idle.setdefault(target, []).append(link)
        # The oldest idle connections are at the front of each list: close the stale.
        for links in self._idle.values():
            while links and now - links[0].idle_since >= IDLE_SECS:
                links.pop(0).close()

    def idle(self, target: Target) -> int:
        """How many idle connections to `target` are kept (for the tests)."""
        return len(self._idle.get(target, []))

    async def close(self) -> None:
        self._closed = True
        links = [link for idle in self._idle.values() for link in idle]
        self._idle.clear()
        for link in links:
            link.close()
        for link in links:
            with contextlib.suppress(OSError, ssl.SSLError):
                await link.writer.wait_closed()


async def _reply(link: _Link) -> Reply:
    """The head of the answer on `link`: interim (1xx) answers are skipped."""
    while True:
        head = await link.reader.readuntil(b"\r\n\r\n")
        reply = _parse_head(head, link)
        if not 100 <= reply.status < 200:
            return reply
        if reply.status == 101:
            raise LinkFailed("the owner switched protocols unasked")


def _parse_head(head: bytes, link: _Link) -> Reply:
    lines = head[:-4].split(b"\r\n")
    version, _, rest = lines[0].partition(b" ")
    code, _, reason = rest.partition(b" ")
    if version not in (b"HTTP/1.1", b"HTTP/1.0") or len(code) != 3 or not code.isdigit():
        raise LinkFailed("the answer's status line is not HTTP/1.x")
    status = int(code)
    pairs: list[tuple[str, str]] = []
    lengths: set[bytes] = set()
    connection: list[bytes] = []
    coding: list[bytes] = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name.strip() != name:
            raise LinkFailed("an answer's header line cannot be read")
        value = value.strip(b" \t")
        # The three that frame the answer, picked out in the one pass.
        lower = name.lower()
        if lower == b"content-length":
            lengths.add(value)
        elif lower == b"connection":
            connection.append(value)
        elif lower == b"transfer-encoding":
            coding.append(value)
        pairs.append((name.decode("ascii"), value.decode("utf-8", "surrogateescape")))
    tokens = _tokens(connection)
    keep_alive = b"close" not in tokens and (version == b"HTTP/1.1" or b"keep-alive" in tokens)
    chunked = b"chunked" in _tokens(coding)
    length: int | None = None
    if status in _NO_BODY or 100 <= status < 200:
        length = 0
    elif not chunked and lengths:
        if len(lengths) > 1 or not all(given.isdigit() for given in lengths):
            raise LinkFailed("the answer's content-length cannot be read")
        length = int(lengths.pop())
    if length is None and not chunked:
        # Its end is the connection's.
        keep_alive = False
    return Reply(
        status=status,
        reason=reason.decode("latin-1"),
        headers=CIMultiDict(pairs),
        length=length,
        chunked=chunked,
        keep_alive=keep_alive,
        link=link,
    )


def _tokens(values: list[bytes]) -> set[bytes]:
    return {token.strip().lower() for value in values for token in value.split(b",")}


__all__ = ["IDLE_SECS", "LinkFailed", "OwnerLinks", "Reply", "Target"]
