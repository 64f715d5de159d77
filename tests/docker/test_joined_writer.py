"""The exec stream's writer (`exec_stream.JoinedWriter`): the writes of one turn of the
event loop reach the transport as one write, in order; a drain, a write_eof and a close
send what waits at once. The transport here records what it is given (the exec stream's
own is a TLS connection to an engine: tests/runtimes/test_docker_provider.py drives it)."""

from __future__ import annotations

import asyncio
from typing import Any

from holm.adapters.docker.exec_stream import JoinedWriter


class Recorded(asyncio.WriteTransport):
    """A transport that keeps each write it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.eof = False
        self.closed = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.eof = True

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_write_buffer_size(self) -> int:
        return 0


def writer() -> tuple[JoinedWriter, Recorded]:
    loop = asyncio.get_running_loop()
    transport = Recorded()
    protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader())
    protocol.connection_made(transport)
    return JoinedWriter(transport, protocol, None, loop), transport


async def test_the_writes_of_one_turn_go_out_as_one_in_order() -> None:
    joined, transport = writer()
    joined.write(b"look")
    joined.write(b"")
    joined.writelines([b"act", b"end"])
    assert transport.writes == []
    await asyncio.sleep(0)
    assert transport.writes == [b"lookactend"]
    joined.write(b"next")
    await asyncio.sleep(0)
    assert transport.writes == [b"lookactend", b"next"]


async def test_drain_write_eof_and_close_send_what_waits_at_once() -> None:
    joined, transport = writer()
    joined.write(b"a")
    await joined.drain()
    assert transport.writes == [b"a"]
    joined.write(b"b")
    joined.write_eof()
    assert transport.writes == [b"a", b"b"] and transport.eof
    joined.write(b"c")
    joined.close()
    assert transport.writes == [b"a", b"b", b"c"] and transport.closed
    # What was sent is not sent again at the turn's end.
    await asyncio.sleep(0)
    assert transport.writes == [b"a", b"b", b"c"]
