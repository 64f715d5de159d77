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
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import struct
from typing import Any

from holm.adapters.docker.engine_tls import (
    API_VERSION,
    EngineAddress,
    certificate_refused,
    tls_refusal,
)
from holm.errors import HolmError, NotFound, ScreenUnavailable, Transport, Unavailable
from holm.streams import Stream, close_stream, stream_pair

# The relay in the box: the socket's path is its argument. When its stdin ends (this side
# closed the stream) it ends, whatever the socket's side does.
RELAY = """\
import os, socket, sys, threading
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    sys.stderr.write(f"{sys.argv[1]}: {e.strerror or e}")
    sys.exit(1)
os.write(1, b"+")
def up():
    while True:
        b = os.read(0, 1 << 20)
        if not b:
            os._exit(0)
        s.sendall(b)
threading.Thread(target=up, daemon=True).start()
while True:
    b = s.recv(1 << 20)
    if not b:
        os._exit(0)
    v = memoryview(b)
    while v:
        v = v[os.write(1, v):]
"""
CONNECT_TIMEOUT_S = 10.0
# Until the relay says it has connected: python3 starts in a loaded box.
RELAY_TIMEOUT_S = 30.0
STDERR_KEPT = 2000
_HEADER = struct.Struct(">BxxxI")
# Streams' pumps, held until they end (the loop keeps only weak references to tasks).
_pumps: set[asyncio.Task[None]] = set()


class EngineRefused(HolmError):
    """Raised only inside this module: the engine's answer, as the error it maps to."""


async def open_exec_stream(
    address: EngineAddress, container: str, socket_path: str, what: str, limit: int
) -> Stream:
    """A stream to `socket_path` in `container` (its name or id); `what` names the socket in
    errors. `Unavailable` when the engine cannot be reached (not retryable when its TLS
    refused us: a retry cannot fix a certificate), `NotFound` when it has no such
    container, `ScreenUnavailable` when the container does not run, `Transport` when nobody
    listens on the socket."""
    reader, writer = await _connect(address)
    try:
        exec_id = await _create_exec(reader, writer, address, container, socket_path)
        await _start_exec(reader, writer, address, exec_id)
        stderr = bytearray()
        first = await asyncio.wait_for(_read_stdout(reader, stderr), RELAY_TIMEOUT_S)
        # The relay's `+` may come in one frame with what the socket said first (x11vnc
        # greets at once).
        if first[:1] != b"+":
            said = stderr.decode(errors="replace").strip() or "the relay ended"
            raise Transport(f"the box's {what} is not reachable: {said}")
    except TimeoutError:
        await close_stream((reader, writer))
        raise Transport(f"the box's {what} did not answer in time") from None
    except BaseException:
        await close_stream((reader, writer))
        raise
    ours, theirs = await stream_pair(limit)
    task = asyncio.create_task(_pump(reader, writer, theirs, first[1:]))
    _pumps.add(task)
    task.add_done_callback(_pumps.discard)
    return ours


async def _connect(address: EngineAddress) -> Stream:
    try:
        return await asyncio.wait_for(
            asyncio.open_connection(
                address.host, address.port, ssl=address.tls, server_hostname=address.host
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


async def _request(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    address: EngineAddress,
    path: str,
    body: dict[str, Any],
    *,
    upgrade: bool = False,
) -> tuple[int, bytes]:
    payload = json.dumps(body).encode()
    head = [
        f"POST /v{API_VERSION}{path} HTTP/1.1",
        f"Host: {address.host}:{address.port}",
        "Content-Type: application/json",
        f"Content-Length: {len(payload)}",
    ]
    if upgrade:
        head += ["Connection: Upgrade", "Upgrade: tcp"]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
    try:
        await writer.drain()
        status_line = await reader.readline()
        headers: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
    except ssl.SSLError as exc:
        # With TLS 1.3 the engine refuses a client certificate after the handshake.
        if certificate_refused(exc):
            raise tls_refusal(exc) from None
        raise Unavailable(f"the Docker Engine broke off: {exc}") from None
    except OSError as exc:
        raise Unavailable(f"the Docker Engine broke off: {exc}") from None
    parts = status_line.split()
    if len(parts) < 2 or not parts[1].isdigit():
        raise Unavailable(f"the Docker Engine answered {status_line[:80]!r}")
    status = int(parts[1])
    if status == 101:
        return status, b""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        data = bytearray()
        while size := int((await reader.readline()).split(b";")[0].strip() or b"0", 16):
            data += await reader.readexactly(size)
            await reader.readline()
        await reader.readline()
        return status, bytes(data)
    return status, await reader.readexactly(int(headers.get("content-length", "0")))


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
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    address: EngineAddress,
    container: str,
    socket_path: str,
) -> str:
    body = {
        "AttachStdin": True,
        "AttachStdout": True,
        "AttachStderr": True,
        "Tty": False,
        "User": "root",
        "Cmd": ["python3", "-I", "-c", RELAY, socket_path],
    }
    status, raw = await _request(reader, writer, address, f"/containers/{container}/exec", body)
    if status != 201:
        raise _refusal(status, raw, container)
    return str(json.loads(raw)["Id"])


async def _start_exec(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    address: EngineAddress,
    exec_id: str,
) -> None:
    body = {"Detach": False, "Tty": False}
    status, raw = await _request(
        reader, writer, address, f"/exec/{exec_id}/start", body, upgrade=True
    )
    if status not in (101, 200):
        raise _refusal(status, raw, exec_id)


async def _read_stdout(reader: asyncio.StreamReader, stderr: bytearray) -> bytes:
    """The next frame of the exec's stdout (b"" at its end); stderr frames on the way are
    kept in `stderr`."""
    while True:
        try:
            kind, size = _HEADER.unpack(await reader.readexactly(_HEADER.size))
            data = await reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            return b""
        if kind == 2:
            stderr += data
            del stderr[:-STDERR_KEPT]
        elif kind == 1 and data:
            return data


async def _pump(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, theirs: Any, said: bytes
) -> None:
    """Carry bytes between the engine's connection and the caller's end of the pair until
    either side ends, then close both."""
    loop = asyncio.get_running_loop()
    try:
        local = await asyncio.open_unix_connection(sock=theirs)
    except BaseException:
        theirs.close()
        await close_stream((reader, writer))
        raise
    stderr = bytearray()

    async def down() -> None:
        if said:
            local[1].write(said)
        while data := await _read_stdout(reader, stderr):
            local[1].write(data)
            await local[1].drain()

    async def up() -> None:
        while data := await local[0].read(1 << 20):
            writer.write(data)
            await writer.drain()

    tasks = [loop.create_task(down()), loop.create_task(up())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        await close_stream(local)
        await close_stream((reader, writer))


__all__ = ["RELAY", "open_exec_stream"]
