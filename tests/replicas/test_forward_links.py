"""The kept-alive connections a forwarding holmd sends requests on (holm/http/owner_links.py),
against real HTTP servers on loopback sockets that answer as this file scripts them (what
an owner does at the edges that a running holmd cannot be made to do on cue: close a
kept-alive connection as a request comes, answer in chunks, until the close, with an
interim 100, cut short, or not HTTP):

- one connection carries one exchange after another;
- a connection the server closed while it was idle is not written on: the next request
  goes on a fresh one, once;
- a connection the server closes as a request arrives, unanswered: a request that may
  not go twice (a click) fails and reached the server once; one that may (`again`) is
  answered on a fresh connection;
- a chunked answer, and one that runs until the connection closes, come whole (and the
  latter's connection is not kept); an interim 100 is skipped;
- a server that is not there, an answer cut short or one that is not HTTP: `LinkFailed`,
  and the connection is not kept."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest
from kits.holmd import free_port

from holm.http.owner_links import LinkFailed, OwnerLinks, Target

# What a scripted server does with the n-th request (from 1) of a connection, given the
# request's head and body: the bytes it answers (None: it closes without answering).
Script = Callable[[int, bytes, bytes], bytes | None]


@dataclass
class Server:
    """A real HTTP/1.1 server on a loopback port, answering as its script says."""

    script: Script
    close_after_answer: bool = False
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    _server: asyncio.Server | None = None

    @property
    def target(self) -> Target:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return Target.of(f"http://127.0.0.1:{port}")

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number = 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length)
                number += 1
                self.requests.append(head.split(b"\r\n")[0])
                answer = self.script(number, head, body)
                if answer is None:
                    return
                writer.write(answer)
                await writer.drain()
                if self.close_after_answer:
                    return
        finally:
            writer.close()


def answer(body: bytes, status: str = "200 OK", extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 %s\r\nContent-Length: %d\r\n%s\r\n%s" % (
        status.encode(),
        len(body),
        extra,
        body,
    )


def echo(number: int, head: bytes, body: bytes) -> bytes | None:
    return answer(b"%d:%s" % (number, body), extra=b"X-Seen: yes\r\nSet-Cookie: a=1\r\n")


def request(method: str, body: bytes = b"") -> bytes:
    return b"%s /thing HTTP/1.1\r\nHost: owner\r\nContent-Length: %d\r\n\r\n%s" % (
        method.encode(),
        len(body),
        body,
    )


@pytest.fixture
async def links() -> AsyncIterator[OwnerLinks]:
    made = OwnerLinks()
    yield made
    await made.close()


async def served(script: Script, **options: bool) -> Server:
    server = Server(script, **options)
    await server.start()
    return server


async def exchange(
    links: OwnerLinks, target: Target, sent: bytes, *, again: bool = False
) -> tuple[int, dict[str, list[str]], bytes]:
    async with links.exchange(target, sent, again=again) as reply:
        pieces = [piece async for piece in reply.pieces()]
        headers: dict[str, list[str]] = {}
        for name, value in reply.headers.items():
            headers.setdefault(name.lower(), []).append(value)
        return reply.status, headers, b"".join(pieces)


async def test_one_connection_carries_one_exchange_after_another(links: OwnerLinks) -> None:
    server = await served(echo)
    try:
        for n in range(1, 4):
            status, headers, body = await exchange(links, server.target, request("POST", b"c"))
            assert (status, body) == (200, b"%d:c" % n)
            assert headers["x-seen"] == ["yes"] and headers["set-cookie"] == ["a=1"]
        assert server.connections == 1
        assert links.idle(server.target) == 1
        # A whole body read with `read` leaves the connection as clean as `pieces` does.
        async with links.exchange(server.target, request("GET"), again=True) as reply:
            assert await reply.read() == b"4:"
        assert server.connections == 1
    finally:
        await server.close()


async def test_a_connection_closed_while_idle_is_not_written_on(links: OwnerLinks) -> None:
    server = await served(echo, close_after_answer=True)
    try:
        assert (await exchange(links, server.target, request("POST", b"a")))[2] == b"1:a"
        # The server's close reaches this process before the next click is sent.
        await wait_until(lambda: server.connections == 1 and not_kept(links, server))
        assert (await exchange(links, server.target, request("POST", b"b")))[2] == b"1:b"
        assert server.requests == [b"POST /thing HTTP/1.1"] * 2
        assert server.connections == 2
    finally:
        await server.close()


def not_kept(links: OwnerLinks, server: Server) -> bool:
    """Whether the idle connection to `server`, if any, reads as ended."""
    idle = links._idle.get(server.target, [])
    return all(not link.usable() for link in idle)


async def wait_until(condition: Callable[[], bool]) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


def drop_the_second(number: int, head: bytes, body: bytes) -> bytes | None:
    """Answers the first request of each connection; closes unanswered on the second."""
    return None if number == 2 else echo(number, head, body)


async def test_a_click_is_never_sent_twice_when_its_connection_closes_unanswered(
    links: OwnerLinks,
) -> None:
    server = await served(drop_the_second)
    try:
        await exchange(links, server.target, request("POST", b"first"))
        with pytest.raises(LinkFailed):
            await exchange(links, server.target, request("POST", b"second"))
        # The click reached the server once, and was not sent again.
        assert server.requests == [b"POST /thing HTTP/1.1"] * 2
        assert server.connections == 1
        assert links.idle(server.target) == 0

        # A request that may go twice goes again, on a fresh connection, and is answered.
        await exchange(links, server.target, request("GET"))
        status, _, body = await exchange(links, server.target, request("GET"), again=True)
        assert (status, body) == (200, b"1:")
        assert server.connections == 3
        # The dropped GET and its one retry: five requests in all.
        assert len(server.requests) == 5
    finally:
        await server.close()


async def test_a_chunked_answer_and_one_up_to_the_close_come_whole(links: OwnerLinks) -> None:
    def chunked(number: int, head: bytes, body: bytes) -> bytes:
        return (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n"
        )

    def to_the_close(number: int, head: bytes, body: bytes) -> bytes:
        return b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it"

    def interim(number: int, head: bytes, body: bytes) -> bytes:
        return b"HTTP/1.1 100 Continue\r\n\r\n" + answer(b"after", "201 Created")

    first = await served(chunked)
    second = await served(to_the_close, close_after_answer=True)
    third = await served(interim)
    try:
        for _ in range(2):
            assert (await exchange(links, first.target, request("GET")))[2] == b"hello world"
        assert first.connections == 1
        assert (await exchange(links, second.target, request("GET")))[2] == b"all of it"
        assert links.idle(second.target) == 0
        assert (await exchange(links, third.target, request("POST")))[:3:2] == (201, b"after")
    finally:
        for server in (first, second, third):
            await server.close()


async def test_no_server_a_cut_answer_or_one_not_http_fail_and_are_not_kept(
    links: OwnerLinks,
) -> None:
    absent = Target.of(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(LinkFailed):
        await exchange(links, absent, request("GET"), again=True)

    def cut(number: int, head: bytes, body: bytes) -> bytes:
        return b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this"

    def not_http(number: int, head: bytes, body: bytes) -> bytes:
        return b"SSH-2.0-OpenSSH_9.2\r\n\r\n"

    def two_lengths(number: int, head: bytes, body: bytes) -> bytes:
        return b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"

    def huge_head(number: int, head: bytes, body: bytes) -> bytes:
        return b"HTTP/1.1 200 OK\r\nX-Long: " + b"x" * 400_000 + b"\r\n\r\n"

    for script in (cut, not_http, two_lengths, huge_head):
        server = await served(script, close_after_answer=True)
        try:
            with pytest.raises(LinkFailed):
                await exchange(links, server.target, request("GET"), again=True)
            assert links.idle(server.target) == 0
            # Not sent again: what the owner answered was wrong, not its connection.
            assert server.connections == 1
        finally:
            await server.close()


async def test_a_caller_that_stops_mid_answer_leaves_no_connection_kept(
    links: OwnerLinks,
) -> None:
    answered = asyncio.Event()

    def slow_tail(number: int, head: bytes, body: bytes) -> bytes:
        answered.set()
        return b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf"

    server = await served(slow_tail)
    try:

        async def read_it() -> None:
            await exchange(links, server.target, request("GET"))

        task = asyncio.ensure_future(read_it())
        await answered.wait()
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert links.idle(server.target) == 0
    finally:
        await server.close()


def test_a_replica_url_names_its_address_host_and_path() -> None:
    plain = Target.of("http://127.0.0.1:8082/")
    assert (plain.host, plain.port, plain.tls, plain.authority, plain.prefix) == (
        "127.0.0.1",
        8082,
        False,
        b"127.0.0.1:8082",
        b"",
    )
    behind = Target.of("https://holm-b.internal/replica")
    assert (behind.port, behind.tls, behind.authority, behind.prefix) == (
        443,
        True,
        b"holm-b.internal",
        b"/replica",
    )
    with pytest.raises(ValueError):
        Target.of("unix:///tmp/holm.sock")
