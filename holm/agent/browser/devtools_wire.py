"""Chromium's DevTools as the agent reaches it, on the box's own 127.0.0.1: its HTTP
`/json` endpoints and a page's WebSocket (RFC 6455, client side), on asyncio's streams.

The standard library does this in little code, where an HTTP client library would cost
every box its import (about 8 MiB of the agent's memory and a quarter of a second of CPU
at its start: docs/agent.md, "Memory"). Only what DevTools needs is here: one request per
connection (`Connection: close`), text messages of any size (fragmented or not), pings
answered, and a close.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import select
import struct
from collections.abc import Iterable
from typing import SupportsIndex
from urllib.parse import urlsplit

# RFC 6455's key for the handshake's answer.
_WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_CONTINUATION, _TEXT, _BINARY, _CLOSE, _PING, _PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
CONNECT_TIMEOUT_S = 10.0


class Unreachable(Exception):
    """DevTools did not answer, or not in its protocol; the message says what happened."""


async def request(port: int, method: str, path: str, timeout: float) -> tuple[int, bytes]:
    """One HTTP request to 127.0.0.1:`port`: the answer's status and body."""
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                writer.write(
                    f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                    "Connection: close\r\nContent-Length: 0\r\n\r\n".encode()
                )
                status, headers = _head(await reader.readuntil(b"\r\n\r\n"))
                length = headers.get("content-length")
                body = await (reader.readexactly(int(length)) if length else reader.read())
                return status, body
            finally:
                writer.close()
    except TimeoutError:
        raise Unreachable(f"{method} {path}: no answer within {timeout:.0f} s") from None
    except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
        raise Unreachable(f"{method} {path}: {exc or type(exc).__name__}") from None


def _head(raw: bytes) -> tuple[int, dict[str, str]]:
    """The status and the headers (names in lower case) of an answer's head."""
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise ValueError(f"not an HTTP answer: {lines[0][:80]!r}")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


class _CountingReader(asyncio.StreamReader):
    """A stream reader that counts the bytes it was given, so that what is buffered and not
    yet read is known (`WebSocket.unread`)."""

    fed = 0

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        data = bytes(data)
        self.fed += len(data)
        super().feed_data(data)


class WebSocket:
    """A client's WebSocket: `send_str`, `async for text in ws`, `close`, and `unread`."""

    def __init__(self, reader: _CountingReader, writer: asyncio.StreamWriter, taken: int) -> None:
        self._reader = reader
        self._writer = writer
        self._sending = asyncio.Lock()
        self._closed = False
        # Bytes read out of the stream so far (the handshake's answer, then frames).
        self._taken = taken

    @classmethod
    async def connect(cls, url: str) -> WebSocket:
        where = urlsplit(url)
        if where.scheme != "ws" or where.hostname is None:
            raise Unreachable(f"not a ws:// address: {url}")
        key = base64.b64encode(os.urandom(16))
        path = where.path + (f"?{where.query}" if where.query else "")
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                reader, writer = await _connect(where.hostname, where.port or 80)
                writer.write(
                    f"GET {path} HTTP/1.1\r\nHost: {where.netloc}\r\nUpgrade: websocket\r\n"
                    f"Connection: Upgrade\r\nSec-WebSocket-Key: {key.decode()}\r\n"
                    "Sec-WebSocket-Version: 13\r\n\r\n".encode()
                )
                answer = await reader.readuntil(b"\r\n\r\n")
                status, headers = _head(answer)
        except TimeoutError:
            raise Unreachable(f"{url}: no handshake within {CONNECT_TIMEOUT_S:.0f} s") from None
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as e:
            raise Unreachable(f"{url}: {e or type(e).__name__}") from None
        accept = base64.b64encode(hashlib.sha1(key + _WS_GUID).digest()).decode()
        if status != 101 or headers.get("sec-websocket-accept") != accept:
            writer.close()
            raise Unreachable(f"{url}: the WebSocket handshake was refused ({status})")
        return cls(reader, writer, len(answer))

    def unread(self) -> bool:
        """Whether bytes have come that no message read so far took: buffered in the
        stream, or waiting on the socket (a look, no read)."""
        if self._reader.fed > self._taken:
            return True
        sock = self._writer.get_extra_info("socket")
        if sock is None or self._closed:
            return False
        readable, _, _ = select.select([sock.fileno()], [], [], 0)
        return bool(readable)

    async def send_str(self, text: str) -> None:
        await self._send(_TEXT, text.encode())

    async def _send(self, opcode: int, payload: bytes) -> None:
        if self._closed:
            raise Unreachable("the WebSocket is closed")
        async with self._sending:
            self._writer.write(_frame(opcode, payload))
            await self._writer.drain()

    def __aiter__(self) -> WebSocket:
        return self

    async def __anext__(self) -> str:
        """The next text message; the iteration ends with the connection (a close, the
        end of the stream, or a binary message, which DevTools never sends)."""
        message = await self._message()
        if message is None:
            raise StopAsyncIteration
        return message

    async def _message(self) -> str | None:
        parts: list[bytes] = []
        try:
            while True:
                final, opcode, payload = await self._frame()
                if opcode == _PING:
                    await self._send(_PONG, payload)
                elif opcode == _PONG:
                    continue
                elif opcode in (_TEXT, _CONTINUATION):
                    parts.append(payload)
                    if final:
                        return b"".join(parts).decode()
                else:
                    return None
        except (OSError, asyncio.IncompleteReadError, Unreachable, UnicodeDecodeError):
            return None

    async def _frame(self) -> tuple[bool, int, bytes]:
        first, second = await self._read(2)
        length = second & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await self._read(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await self._read(8))
        # A server's frames come unmasked, but a mask is no error to read through.
        key = await self._read(4) if second & 0x80 else b""
        payload = await self._read(length)
        return bool(first & 0x80), first & 0x0F, _masked(payload, key) if key else payload

    async def _read(self, count: int) -> bytes:
        data = await self._reader.readexactly(count)
        self._taken += count
        return data

    async def close(self) -> None:
        if self._closed:
            return
        with contextlib.suppress(OSError, Unreachable):
            await self._send(_CLOSE, struct.pack("!H", 1000))
        self._closed = True
        self._writer.close()


async def _connect(host: str, port: int) -> tuple[_CountingReader, asyncio.StreamWriter]:
    """`asyncio.open_connection`, with a reader that counts what it is given."""
    loop = asyncio.get_running_loop()
    reader = _CountingReader(loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    transport, _ = await loop.create_connection(lambda: protocol, host, port)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


def _frame(opcode: int, payload: bytes) -> bytes:
    """One final frame of `payload`, masked (as a client's must be)."""
    size = len(payload)
    if size < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
    elif size < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
    key = os.urandom(4)
    return head + key + _masked(payload, key)


def _masked(payload: bytes, key: bytes) -> bytes:
    """`payload` XORed with the repeated `key`: one big-integer XOR, not a loop in Python."""
    size = len(payload)
    repeated = (key * (size // 4 + 1))[:size]
    mixed = int.from_bytes(payload, "little") ^ int.from_bytes(repeated, "little")
    return mixed.to_bytes(size, "little")
