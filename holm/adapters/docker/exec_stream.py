"""A byte stream to a Unix socket inside a container of a remote engine, through the
engine's own TLS API: an exec of a small relay in the box (`RELAY`, run by the box's own
python3), attached (`POST /exec/{id}/start` upgraded to a raw connection, as `docker exec
-i` does). No port of the box or of its host is published, and nothing but the engine's
authenticated API is reached.

Without a TTY the engine multiplexes the exec's output: each frame is 8 bytes (the stream,
1 for stdout and 2 for stderr, then three zeros and the length, big-endian) and its bytes;
what is written goes to the exec's stdin as it is. The relay writes one `+` when it has
connected to the socket, so that a socket nobody listens on is `Transport` here (with what
the relay said on stderr), as a local socket's refusal is.

The stream handed out is the TLS connection itself: its protocol (`_ExecProtocol`) reads
the engine's HTTP answers, then takes the frames apart straight into the caller's
`StreamReader`, and the caller's writer (`JoinedWriter`: the writes of one turn of the
loop as one) writes to the connection; no task or socket pair stands between (each would
cost a click a hop through the event loop).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import struct
from collections.abc import Iterable
from typing import Any

from holm.adapters.docker.engine_tls import (
    API_VERSION,
    CONNECT_TIMEOUT_S,
    SHUTDOWN_TIMEOUT_S,
    EngineAddress,
    certificate_refused,
    tls_refusal,
)
from holm.errors import HolmError, NotFound, ScreenUnavailable, Transport, Unavailable
from holm.streams import Stream

# The relay in the box: the socket's path is its argument, and how long to wait for it to
# accept (seconds; a new box's agent binds it a while after the container starts), the
# second: one exec that waits in the box, not an exec (a python3 start, on a box that is
# starting) every poll. The third, when given, is a socket that takes the relay's stdin and
# stdout itself (the agent's `pipes.sock`, holm/agent/handed_pipes.py): once the first
# socket accepts, the relay hands them over there and only waits for that socket's end,
# so a message crosses one process fewer each way; an agent without it (an older image)
# is relayed as below. Otherwise one thread polling both sides: a thread each way would
# hand the GIL over at every message, which a click pays for. It ends when either side
# ends (this side closed the stream, or the socket's closed it).
RELAY = """\
import os, select, socket, sys, time
end = time.monotonic() + float(sys.argv[2])
while True:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(sys.argv[1])
        break
    except OSError as e:
        s.close()
        if time.monotonic() >= end:
            sys.stderr.write(f"{sys.argv[1]}: {e.strerror or e}")
            sys.exit(1)
        time.sleep(0.02)
if len(sys.argv) > 3:
    h = socket.socket(socket.AF_UNIX)
    try:
        h.connect(sys.argv[3])
    except OSError:
        h.close()
    else:
        s.close()
        os.write(1, b"+")
        socket.send_fds(h, [b"+"], [0, 1])
        os.close(0)
        os.close(1)
        h.recv(1)
        os._exit(0)
os.write(1, b"+")
p = select.poll()
p.register(0, select.POLLIN)
p.register(s.fileno(), select.POLLIN)
while True:
    for fd, _ in p.poll():
        if fd == 0:
            b = os.read(0, 1 << 20)
            if not b:
                os._exit(0)
            s.sendall(b)
        else:
            b = s.recv(1 << 20)
            if not b:
                os._exit(0)
            v = memoryview(b)
            while v:
                v = v[os.write(1, v):]
"""
# Until the relay says it has connected: python3 starts in a loaded box.
RELAY_TIMEOUT_S = 30.0
STDERR_KEPT = 2000
# `/_ping` answers `OK`.
PING_LIMIT = 1 << 12
_HEADER = struct.Struct(">BxxxI")


class _ExecProtocol(asyncio.StreamReaderProtocol):
    """The engine's connection: HTTP until the exec is attached (`upgrade`), then the
    exec's stdout frames into the reader and its stderr kept for errors."""

    def __init__(self, limit: int) -> None:
        self.reader = asyncio.StreamReader(limit=limit)
        super().__init__(self.reader)
        self._raw = bytearray()
        self._upgraded = False
        self._ended = False
        self._lost: Exception | None = None
        self._more: asyncio.Event = asyncio.Event()
        self.stderr = bytearray()

    def data_received(self, data: bytes) -> None:
        self._raw += data
        if self._upgraded:
            self._frames()
        else:
            self._more.set()

    def eof_received(self) -> bool | None:
        self._ended = True
        self._more.set()
        return super().eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended = True
        self._lost = exc
        self._more.set()
        super().connection_lost(exc)

    def upgrade(self) -> None:
        """From here on the bytes are the exec's frames."""
        self._upgraded = True
        self._frames()

    def _frames(self) -> None:
        raw = self._raw
        while len(raw) >= _HEADER.size:
            kind, size = _HEADER.unpack_from(raw)
            end = _HEADER.size + size
            if len(raw) < end:
                break
            data = bytes(raw[_HEADER.size : end])
            del raw[:end]
            if kind == 1:
                super().data_received(data)
            elif kind == 2:
                self.stderr += data
                del self.stderr[:-STDERR_KEPT]

    # The HTTP phase reads `_raw` itself.

    async def read_until(self, separator: bytes) -> bytes:
        while (at := self._raw.find(separator)) < 0:
            await self._wait()
        line = bytes(self._raw[: at + len(separator)])
        del self._raw[: at + len(separator)]
        return line

    async def read_exactly(self, size: int) -> bytes:
        while len(self._raw) < size:
            await self._wait()
        data = bytes(self._raw[:size])
        del self._raw[:size]
        return data

    async def _wait(self) -> None:
        if self._ended:
            # With TLS 1.3 the engine refuses a client certificate after the handshake,
            # at the first read.
            if isinstance(self._lost, ssl.SSLError) and certificate_refused(self._lost):
                raise tls_refusal(self._lost)
            raise Unavailable(f"the Docker Engine closed the connection: {self._lost}")
        self._more.clear()
        await self._more.wait()


class JoinedWriter(asyncio.StreamWriter):
    """A writer whose writes of one turn of the event loop go out as one: the requests a
    step sends together (a look at the screen, the act, the batch's end) cross TLS,
    dockerd, the shim's pipes and the relay once, not once each (each crossing wakes each
    of those processes: `bench/exec_hops.py` measured three writes 0.2 ms slower than
    one). `drain`, `write_eof` and `close` send what waits first, so a pump that drains
    after each write is not held back."""

    def __init__(
        self,
        transport: asyncio.WriteTransport,
        protocol: asyncio.BaseProtocol,
        reader: asyncio.StreamReader | None,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        super().__init__(transport, protocol, reader, loop)
        self._waiting = bytearray()
        self._loop = loop

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._waiting:
            self._loop.call_soon(self._send)
        self._waiting += data

    def writelines(self, data: Iterable[bytes | bytearray | memoryview]) -> None:
        for chunk in data:
            self.write(chunk)

    def _send(self) -> None:
        if not self._waiting:
            return
        data = bytes(self._waiting)
        self._waiting.clear()
        if not self.transport.is_closing():
            self.transport.write(data)

    async def drain(self) -> None:
        self._send()
        await super().drain()

    def write_eof(self) -> None:
        self._send()
        super().write_eof()

    def close(self) -> None:
        self._send()
        super().close()


async def open_exec_stream(
    address: EngineAddress,
    container: str,
    socket_path: str,
    what: str,
    limit: int,
    *,
    wait_s: float = 0.0,
    handed_to: str | None = None,
) -> Stream:
    """A stream to `socket_path` in `container` (its name or id); `what` names the socket in
    errors. `Unavailable` when the engine cannot be reached (not retryable when its TLS
    refused us: a retry cannot fix a certificate), `NotFound` when it has no such
    container, `ScreenUnavailable` when the container does not run, `Transport` when nobody
    listens on the socket (within `wait_s`, in the box). With `handed_to`, the relay hands
    the exec's stdin and stdout to the socket there when it has one (`RELAY`)."""
    transport, protocol = await _connect(address, limit)
    try:
        command = ["python3", "-I", "-c", RELAY, socket_path, str(wait_s)]
        if handed_to is not None:
            command.append(handed_to)
        await attach_exec(transport, protocol, address, container, command)
        try:
            first = await asyncio.wait_for(protocol.reader.read(1), RELAY_TIMEOUT_S + wait_s)
        except TimeoutError:
            raise Transport(f"the box's {what} did not answer in time") from None
        if first != b"+":
            said = protocol.stderr.decode(errors="replace").strip() or "the relay ended"
            raise Transport(f"the box's {what} is not reachable: {said}")
    except BaseException:
        transport.close()
        raise
    loop = asyncio.get_running_loop()
    return protocol.reader, JoinedWriter(transport, protocol, protocol.reader, loop)


async def attach_exec(
    transport: asyncio.Transport,
    protocol: _ExecProtocol,
    address: EngineAddress,
    container: str,
    command: list[str],
) -> None:
    """Run `command` in `container` attached to the connection (`transport`, `protocol`,
    fresh from `_connect` or one like it): from here on its reader has the command's
    stdout, and what the transport is written goes to its stdin."""
    exec_id = await _create_exec(transport, protocol, address, container, command)
    await _start_exec(transport, protocol, address, exec_id)
    protocol.upgrade()


async def ping(address: EngineAddress, within_s: float) -> None:
    """Ask the engine `GET /_ping` on a connection of its own, all of it within `within_s`:
    `Unavailable` when it does not answer so (not retryable when its TLS refused us). A
    connection already open to a host that went away waits on TCP's retransmits, whose
    backoff grows to minutes; a new one to a host that is gone fails or times out here."""
    try:
        async with asyncio.timeout(within_s):
            transport, protocol = await _connect(address, PING_LIMIT)
            try:
                status, _ = await _request(transport, protocol, address, "/_ping", None)
            finally:
                transport.abort()
    except TimeoutError:
        raise Unavailable(
            f"the Docker Engine at {address.host}:{address.port} did not answer in {within_s} s"
        ) from None
    if status != 200:
        raise Unavailable(f"the Docker Engine at {address.host}:{address.port} answered {status}")


async def _connect(address: EngineAddress, limit: int) -> tuple[asyncio.Transport, _ExecProtocol]:
    loop = asyncio.get_running_loop()
    try:
        transport, protocol = await asyncio.wait_for(
            loop.create_connection(
                lambda: _ExecProtocol(limit),
                address.host,
                address.port,
                ssl=address.tls,
                server_hostname=address.host,
                ssl_shutdown_timeout=SHUTDOWN_TIMEOUT_S,
            ),
            CONNECT_TIMEOUT_S,
        )
    except ssl.SSLError as exc:
        if certificate_refused(exc):
            raise tls_refusal(exc) from None
        raise Unavailable(f"the Docker Engine's TLS broke off: {exc}") from None
    except (OSError, TimeoutError) as exc:
        raise Unavailable(
            f"the Docker Engine at {address.host}:{address.port} does not answer: {exc}"
        ) from None
    return transport, protocol


async def _request(
    transport: asyncio.Transport,
    protocol: _ExecProtocol,
    address: EngineAddress,
    path: str,
    body: dict[str, Any] | None,
    *,
    upgrade: bool = False,
) -> tuple[int, bytes]:
    """A POST of `body` as JSON, or a GET without one; the status and the answer's body."""
    head = [
        f"{'GET' if body is None else 'POST'} /v{API_VERSION}{path} HTTP/1.1",
        f"Host: {address.host}:{address.port}",
    ]
    payload = b"" if body is None else json.dumps(body).encode()
    if body is not None:
        head += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
    if upgrade:
        head += ["Connection: Upgrade", "Upgrade: tcp"]
    transport.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
    status_line = await protocol.read_until(b"\r\n")
    headers: dict[str, str] = {}
    while (line := await protocol.read_until(b"\r\n")) != b"\r\n":
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    parts = status_line.split()
    if len(parts) < 2 or not parts[1].isdigit():
        raise Unavailable(f"the Docker Engine answered {status_line[:80]!r}")
    status = int(parts[1])
    if status == 101:
        return status, b""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        data = bytearray()
        while size := int((await protocol.read_until(b"\r\n")).split(b";")[0].strip(), 16):
            data += await protocol.read_exactly(size)
            await protocol.read_until(b"\r\n")
        await protocol.read_until(b"\r\n")
        return status, bytes(data)
    return status, await protocol.read_exactly(int(headers.get("content-length", "0")))


def _refusal(status: int, raw: bytes, container: str) -> HolmError:
    try:
        message = str(json.loads(raw).get("message", ""))
    except (ValueError, AttributeError):
        message = raw.decode(errors="replace")[:200]
    if status == 404:
        return NotFound(f"the Docker Engine has no container {container}: {message}")
    if status == 409:
        return ScreenUnavailable(f"container {container} does not run: {message}")
    return Unavailable(f"the Docker Engine refused an exec ({status}): {message}")


async def _create_exec(
    transport: asyncio.Transport,
    protocol: _ExecProtocol,
    address: EngineAddress,
    container: str,
    command: list[str],
) -> str:
    body = {
        "AttachStdin": True,
        "AttachStdout": True,
        "AttachStderr": True,
        "Tty": False,
        "User": "root",
        "Cmd": command,
    }
    path = f"/containers/{container}/exec"
    status, raw = await _request(transport, protocol, address, path, body)
    if status != 201:
        raise _refusal(status, raw, container)
    return str(json.loads(raw)["Id"])


async def _start_exec(
    transport: asyncio.Transport, protocol: _ExecProtocol, address: EngineAddress, exec_id: str
) -> None:
    body = {"Detach": False, "Tty": False}
    path = f"/exec/{exec_id}/start"
    status, raw = await _request(transport, protocol, address, path, body, upgrade=True)
    if status != 101:
        raise _refusal(status, raw, exec_id)


__all__ = ["RELAY", "JoinedWriter", "attach_exec", "open_exec_stream", "ping"]
