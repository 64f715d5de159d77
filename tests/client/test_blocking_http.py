"""The sync client's transport (holm/blocking_http.py) against a raw HTTP server on
loopback that records what arrives: a connection the server closed while idle is opened
again before the next request, which arrives once; threads that ask at once each have a
connection; paths and queries arrive quoted as aiohttp quotes them; the token and body go
with every request."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from holm.client import SyncHolmClient

ANSWER = b'{"ok": true, "service": "holm-server"}'
WAIT_S = 10.0


@dataclass
class Arrived:
    connection: int
    line: str
    headers: dict[str, str]
    body: bytes


@dataclass
class RawServer:
    """Answers each request with ANSWER, keep-alive; `close_after_answer` ends each
    connection after its first answer without saying so, as a server's idle timeout does;
    `hold` keeps every answer back until that many requests are in at once."""

    close_after_answer: bool = False
    hold: int = 0
    arrived: list[Arrived] = field(default_factory=list)
    listener: socket.socket = field(default_factory=socket.socket)
    _in: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def start(self) -> None:
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        number = 0
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            number += 1
            threading.Thread(target=self._serve, args=(conn, number), daemon=True).start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        with conn, conn.makefile("rb") as reader:
            while line := reader.readline():
                headers = {}
                while (header := reader.readline()) not in (b"\r\n", b""):
                    name, _, value = header.decode().partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = reader.read(int(headers.get("content-length", "0")))
                with self._lock:
                    self.arrived.append(Arrived(number, line.decode().strip(), headers, body))
                    count = len(self.arrived)
                if self.hold:
                    if count >= self.hold:
                        for _ in range(self.hold):
                            self._in.release()
                    assert self._in.acquire(timeout=WAIT_S), "the other request never came"
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(ANSWER), ANSWER)
                )
                if self.close_after_answer:
                    return


@pytest.fixture
def raw() -> Iterator[RawServer]:
    server = RawServer()
    yield server
    server.listener.close()


def test_a_connection_the_server_closed_while_idle_is_opened_again(raw: RawServer) -> None:
    raw.close_after_answer = True
    raw.start()
    with SyncHolmClient(raw.url) as client:
        for _ in range(3):
            assert client.health().ok
    # Each request once, each on a connection of its own.
    assert [(a.connection, a.line) for a in raw.arrived] == [
        (1, "GET /v1/health HTTP/1.1"),
        (2, "GET /v1/health HTTP/1.1"),
        (3, "GET /v1/health HTTP/1.1"),
    ]


def test_requests_share_one_kept_connection(raw: RawServer) -> None:
    raw.start()
    with SyncHolmClient(raw.url) as client:
        for _ in range(3):
            assert client.health().ok
    assert [a.connection for a in raw.arrived] == [1, 1, 1]


def test_threads_that_ask_at_once_each_have_a_connection(raw: RawServer) -> None:
    # The server answers neither until both are in: on one shared connection the second
    # could not be sent before the first was answered.
    raw.hold = 2
    raw.start()
    answers: list[bool] = []
    with SyncHolmClient(raw.url) as client:
        threads = [
            threading.Thread(target=lambda: answers.append(client.health().ok)) for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=WAIT_S * 2)
    assert answers == [True, True]
    assert sorted(a.connection for a in raw.arrived) == [1, 2]


def test_paths_queries_token_and_body_arrive_as_sent(raw: RawServer) -> None:
    raw.start()
    with SyncHolmClient(raw.url + "/prefix/", token="s3cret") as client:
        client.request(
            "POST",
            "/v1/states/my state%zz%41",
            params={"url": "https://a.example/?q=1 2", "all": True, "none": None},
            body={"text": "é"},
            idempotency_key="k1",
        )
    [arrived] = raw.arrived
    # A space and a lone `%` quoted, an escape kept; in the query a space is %20, a bool
    # is `true`, None is left out.
    assert arrived.line == (
        "POST /prefix/v1/states/my%20state%25zz%41"
        "?url=https%3A%2F%2Fa.example%2F%3Fq%3D1%202&all=true HTTP/1.1"
    )
    assert arrived.headers["authorization"] == "Bearer s3cret"
    assert arrived.headers["content-type"] == "application/json"
    assert arrived.headers["idempotency-key"] == "k1"
    assert arrived.body == '{"text":"é"}'.encode()
