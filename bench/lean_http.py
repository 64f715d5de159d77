"""A blocking HTTP/1.1 client on one keep-alive connection, as lean as a client can be:
what the benches time a server's answers with.

The benches' aiohttp client spends about 0.5 ms of CPU on each request of its own
(bench/click_path.py prints it), as much as holmd's whole answer to a move: timed through
it, a server's figures are mostly the client's. This one writes the request with one
`sendall` and reads the answer with `recv` until its `content-length` is in, about 30 µs
of Python a request. It speaks only what the benches' servers answer: a status line,
headers, and a body with a `content-length` or in chunks (cua's `/cmd` streams its answer
as one server-sent event).
"""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit


class LeanHttp:
    def __init__(self, base: str) -> None:
        url = urlsplit(base)
        assert url.hostname is not None and url.port is not None, base
        self.address = (url.hostname, url.port)
        self.host = f"{url.hostname}:{url.port}".encode()
        self._sock: socket.socket | None = None

    def _connected(self) -> socket.socket:
        if self._sock is None:
            sock = socket.create_connection(self.address)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock = sock
        return self._sock

    def request(
        self, method: str, path: str, body: Any = None, extra: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        """The status and body of one request; `body`, when given, is sent as JSON."""
        data = b"" if body is None else json.dumps(body).encode()
        head = b"%s %s HTTP/1.1\r\nHost: %s\r\n" % (method.encode(), path.encode(), self.host)
        for name, value in (extra or {}).items():
            head += b"%s: %s\r\n" % (name.encode(), value.encode())
        if body is not None:
            head += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(data)
        sock = self._connected()
        sock.sendall(head + b"\r\n" + data)
        got = b""
        while (end := got.find(b"\r\n\r\n")) < 0:
            got += self._recv(sock)
        status = int(got[9:12])
        headers = got[:end].lower() + b"\r\n"
        rest = got[end + 4 :]
        length = _content_length(headers)
        if length is None:
            assert b"\r\ntransfer-encoding: chunked\r\n" in headers, headers
            return status, self._chunks(sock, rest)
        while len(rest) < length:
            rest += self._recv(sock)
        return status, rest[:length]

    def _chunks(self, sock: socket.socket, got: bytes) -> bytes:
        body = b""
        while True:
            while (end := got.find(b"\r\n")) < 0:
                got += self._recv(sock)
            size = int(got[:end].split(b";")[0], 16)
            while len(got) < end + 2 + size + 2:
                got += self._recv(sock)
            body += got[end + 2 : end + 2 + size]
            got = got[end + 2 + size + 2 :]
            if size == 0:
                return body

    def json(self, method: str, path: str, body: Any = None) -> Any:
        status, data = self.request(method, path, body)
        assert 200 <= status < 300, (status, data[:300])
        return json.loads(data)

    def _recv(self, sock: socket.socket) -> bytes:
        chunk = sock.recv(65536)
        if not chunk:
            self.close()
            raise ConnectionError("the server closed the connection")
        return chunk

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _content_length(headers: bytes) -> int | None:
    at = headers.find(b"\r\ncontent-length:")
    if at < 0:
        return None
    return int(headers[at + 17 : headers.find(b"\r\n", at + 17)].strip() or b"0")
