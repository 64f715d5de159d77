"""Blocking HTTP/1.1 requests on keep-alive connections of the standard library's
`http.client`: the transport of `SyncHolmClient` (holm/client.py), and so of the `holm`
CLI.

A `holm` command is one short process that sends a request or two. aiohttp and asyncio,
which the async client needs, took about 110 ms of a command's 170 ms to import (bench/
cli.py); `http.client` is most of the way imported with Python itself. Each thread has a
connection of its own (`holm diff` asks from two threads at once), kept open between
requests; one the server has closed while idle is opened again before a request is sent on
it. When the server closes it just as a request goes out, an idempotent request (a GET, a
PUT, a DELETE) is sent once more on a new connection, as aiohttp does (RFC 9112, 9.3.1);
any other fails as unreachable, since it may have been done.
"""

from __future__ import annotations

import re
import select
import socket
import threading
from collections.abc import Mapping
from http.client import HTTPConnection, HTTPException, HTTPSConnection
from urllib.parse import quote, urlencode, urlsplit

# A `%` that starts no escape, quoted as aiohttp's URLs quote it; escapes are kept.
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_PATH_SAFE = "/%!$&'()*+,;=:@~"
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})


class TransportError(Exception):
    """The server could not be reached, or the connection broke before its answer."""


class BlockingHttp:
    """Requests to one server (`url`: an http or https URL, its host and port, and a path
    prefix)."""

    def __init__(self, url: str, connect_timeout: float) -> None:
        parts = urlsplit(url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._connect_timeout = connect_timeout
        self._local = threading.local()
        self._opened: list[HTTPConnection] = []
        self._lock = threading.Lock()

    def send(
        self,
        method: str,
        path: str,
        query: Mapping[str, str],
        body: bytes | None,
        headers: Mapping[str, str],
    ) -> tuple[int, bytes]:
        """The status and the whole body of one request's answer."""
        target = self._prefix + quote(_LONE_PERCENT.sub("%25", path), safe=_PATH_SAFE)
        if query:
            target += "?" + urlencode(query, quote_via=quote)
        retry = method in IDEMPOTENT
        while True:
            connection, kept = self._connection()
            try:
                connection.request(method, target, body=body, headers=dict(headers))
                response = connection.getresponse()
                payload = response.read()
            except (OSError, HTTPException) as exc:
                self._forget(connection)
                if kept and retry:
                    retry = False
                    continue
                raise TransportError(str(exc) or type(exc).__name__) from exc
            if response.will_close:
                self._forget(connection)
            return response.status, payload

    def close(self) -> None:
        """Close every thread's connection."""
        with self._lock:
            opened, self._opened = self._opened, []
        for connection in opened:
            connection.close()

    def _connection(self) -> tuple[HTTPConnection, bool]:
        """This thread's connection, and whether it was kept from an earlier request."""
        connection: HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is not None and _closed_by_peer(connection):
            self._forget(connection)
            connection = None
        if connection is not None:
            return connection, True
        kind = HTTPSConnection if self._https else HTTPConnection
        connection = kind(self._host, self._port, timeout=self._connect_timeout)
        try:
            connection.connect()
        except OSError as exc:
            raise TransportError(str(exc) or type(exc).__name__) from exc
        assert connection.sock is not None
        # Only the connection is bounded: an answer may take minutes (an exec runs up
        # to 10, a fork 3); the server bounds those.
        connection.sock.settimeout(None)
        connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._local.connection = connection
        with self._lock:
            self._opened.append(connection)
        return connection, False

    def _forget(self, connection: HTTPConnection) -> None:
        connection.close()
        if getattr(self._local, "connection", None) is connection:
            self._local.connection = None
        with self._lock:
            if connection in self._opened:
                self._opened.remove(connection)


def _closed_by_peer(connection: HTTPConnection) -> bool:
    """Whether a kept connection has something to read between answers: the server's end
    of it (or bytes no request asked for). Either way it is not used again."""
    if connection.sock is None:
        return True
    poll = select.poll()
    poll.register(connection.sock, select.POLLIN)
    return bool(poll.poll(0))
