"""A VNC door: a TCP port of holmd where a standard VNC client reaches one screen of a box
with `spec.policy.auth: "password"`, by RFB's VNC authentication (holm/vnc_auth.py).

The door is the RFB server to the client: it says `RFB 003.008`, offers security type 2
only, sends a fresh 16-byte challenge and checks the answer against the box's password in
constant time. A wrong answer gets `SecurityResult` failed with a reason, after a pause,
and the connection is closed; past `MAX_FAILURES` wrong answers in `FAILURE_WINDOW_SECS`
the door refuses every client for the rest of that window (the password is 8 characters
of DES: a guesser must be slowed). Only then is the screen's VNC server opened (through the
engine, whatever the runtime), its own handshake done by the door (version, security None),
and the client's `ClientInit` onward passed both ways.

The box is hostile: what it says in its handshake is read with bounds and a deadline, and
a reason it gives is logged, never passed to the client. The client is untrusted too: the
handshake has a deadline, a door serves at most `MAX_CLIENTS` at once, and the client's
messages pass through `rfb.ClientStream` (bounded, cut into whole messages), whose key and
pointer events are recorded as the person's (`acted`, actor `person`) as a control
viewer's are. The password is never logged."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import time
from collections import deque
from collections.abc import Awaitable, Callable

from holm.errors import HolmError
from holm.streams import until_first
from holm.vnc_auth import CHALLENGE_BYTES, answers, new_challenge

from .relay import CHUNK, SERVER_VERSION
from .rfb import ClientStream, Message, RfbError

log = logging.getLogger(__name__)

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]
OpenScreen = Callable[[], Awaitable[Stream]]
Password = Callable[[], Awaitable[str]]
OnInput = Callable[[Message], None]
MakeInput = Callable[[], OnInput | None]

SECURITY_NONE = 1
SECURITY_VNC = 2
HANDSHAKE_SECS = 10.0
# A wrong password waits this long for its answer.
FAILURE_PAUSE_SECS = 1.0
MAX_FAILURES = 5
FAILURE_WINDOW_SECS = 60.0
MAX_CLIENTS = 8
# The most of a failure reason the box's VNC server may send that the door reads.
MAX_REASON = 1024
SHUT = "too many wrong passwords: try again later"


class Failures:
    """The door's recent wrong passwords; past `limit` in `window` seconds it is shut.
    `clock` is a parameter so that the limit is tested without waiting."""

    def __init__(
        self,
        limit: int = MAX_FAILURES,
        window: float = FAILURE_WINDOW_SECS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._limit = limit
        self._window = window
        self._clock = clock
        self._times: deque[float] = deque()

    def _forget_old(self) -> None:
        now = self._clock()
        while self._times and now - self._times[0] >= self._window:
            self._times.popleft()

    def shut(self) -> bool:
        self._forget_old()
        return len(self._times) >= self._limit

    def add(self) -> None:
        self._forget_old()
        self._times.append(self._clock())


class Refused(Exception):
    """A client the door turns away after security was chosen: `SecurityResult` failed,
    with the reason RFB 3.8 lets it tell (`minor` is the client's RFB 3.x)."""

    def __init__(self, reason: str, minor: int) -> None:
        super().__init__(reason)
        self.minor = minor


class Told(Exception):
    """A client already told why it is turned away: the door just closes."""


class VncDoor:
    """One screen's door: `open` listens, `close` stops listening and closes every
    connection."""

    def __init__(
        self,
        box_id: str,
        screen: int,
        host: str,
        password: Password,
        open_screen: OpenScreen,
        make_input: MakeInput,
    ) -> None:
        self.box_id = box_id
        self.screen = screen
        self.host = host
        self._password = password
        self._open_screen = open_screen
        self._make_input = make_input
        self._server: asyncio.Server | None = None
        self._clients: set[asyncio.Task[None]] = set()
        self.failures = Failures()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def bound(self) -> tuple[str, int]:
        """The address the listening socket is bound to."""
        assert self._server is not None
        name = self._server.sockets[0].getsockname()
        return str(name[0]), int(name[1])

    async def open(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.host, 0, limit=CHUNK)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._clients):
            task.cancel()
        for task in list(self._clients):
            with contextlib.suppress(BaseException):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._clients) >= MAX_CLIENTS:
            writer.close()
            return
        task = asyncio.create_task(self._serve(reader, writer), name="vnc door client")
        self._clients.add(task)
        task.add_done_callback(self._clients.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: Stream | None = None
        where = f"the VNC door of {self.box_id} screen {self.screen}"
        try:
            async with asyncio.timeout(HANDSHAKE_SECS):
                minor = await self._greet(reader, writer)
            try:
                async with asyncio.timeout(HANDSHAKE_SECS):
                    upstream = await self._open_upstream()
            except (HolmError, RfbError, OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
                log.warning("%s: the screen's VNC server: %s", where, _said(exc))
                raise Refused("the box's screen cannot be reached now", minor) from None
            writer.write(struct.pack(">I", 0))  # SecurityResult OK
            await writer.drain()
            await self._splice(reader, writer, upstream)
        except Refused as refused:
            await _refuse(writer, refused.minor, str(refused))
        except Told:
            pass
        except (RfbError, asyncio.IncompleteReadError, TimeoutError, OSError) as exc:
            log.info("%s closed a client: %s", where, _said(exc))
        except Exception:
            log.exception("%s failed a client", where)
        finally:
            for w in (writer, upstream[1] if upstream else None):
                if w is not None:
                    w.close()
                    with contextlib.suppress(Exception):
                        await w.wait_closed()

    async def _greet(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
        """The client's side of the handshake up to the password's check; answers the
        client's minor version. Raises `Refused` for a client turned away."""
        writer.write(SERVER_VERSION)
        await writer.drain()
        stream = ClientStream()
        said = await reader.readexactly(len(SERVER_VERSION))
        list(stream.feed(said))  # refuses what is not `RFB xxx.yyy\n`
        if said[4:7] != b"003":
            raise RfbError(f"an RFB version this door does not speak: {said!r}")
        asked = int(said[8:11])
        minor = 8 if asked >= 8 else 7 if asked == 7 else 3
        if self.failures.shut():
            # No security types (RFB 3.7 on: a count of 0; 3.3: type 0), then the reason.
            reason = SHUT.encode()
            head = bytes([0]) if minor >= 7 else struct.pack(">I", 0)
            writer.write(head + struct.pack(">I", len(reason)) + reason)
            await writer.drain()
            raise Told()
        if minor >= 7:
            writer.write(bytes([1, SECURITY_VNC]))
            await writer.drain()
            chosen = (await reader.readexactly(1))[0]
            if chosen != SECURITY_VNC:
                raise Refused("this door takes VNC authentication (type 2) only", minor)
        else:
            writer.write(struct.pack(">I", SECURITY_VNC))
        challenge = new_challenge()
        writer.write(challenge)
        await writer.drain()
        response = await reader.readexactly(CHALLENGE_BYTES)
        try:
            password = await self._password()
        except HolmError as exc:
            # A `password_secret` removed or changed to what cannot be one: the message
            # names the secret, never a value.
            log.warning("the VNC door of %s has no password: %s", self.box_id, exc.message)
            raise Refused("the box's VNC password is not set", minor) from None
        if not answers(challenge, response, password):
            self.failures.add()
            await asyncio.sleep(FAILURE_PAUSE_SECS)
            raise Refused("wrong password", minor)
        return minor

    async def _open_upstream(self) -> Stream:
        """The screen's VNC server, past its handshake (RFB 3.8, security None), ready for
        the client's `ClientInit`."""
        reader, writer = await self._open_screen()
        try:
            # Said first: LibVNCServer greets a client that spoke first at once (relay.py).
            writer.write(SERVER_VERSION)
            await writer.drain()
            greeting = await reader.readexactly(len(SERVER_VERSION))
            if greeting != SERVER_VERSION:
                raise RfbError(f"it speaks {greeting[:12]!r}, not RFB 3.8")
            count = (await reader.readexactly(1))[0]
            if count == 0:
                (length,) = struct.unpack(">I", await reader.readexactly(4))
                reason = await reader.readexactly(min(length, MAX_REASON))
                raise RfbError(f"it refused: {reason!r}")
            types = await reader.readexactly(count)
            if SECURITY_NONE not in types:
                raise RfbError(f"it offers no security None (types {list(types)})")
            writer.write(bytes([SECURITY_NONE]))
            await writer.drain()
            (result,) = struct.unpack(">I", await reader.readexactly(4))
            if result != 0:
                raise RfbError("it failed security None")
        except BaseException:
            writer.close()
            raise
        return reader, writer

    async def _splice(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: Stream
    ) -> None:
        box_reader, box_writer = upstream
        on_input = self._make_input()

        async def to_box() -> None:
            stream = ClientStream()
            # The handshake the door did itself: what follows is the client's ClientInit.
            list(stream.feed(SERVER_VERSION + bytes([SECURITY_NONE])))
            while data := await reader.read(CHUNK):
                for message in stream.feed(data):
                    if message.is_input and on_input is not None:
                        on_input(message)
                    box_writer.write(message.data)
                await box_writer.drain()

        async def to_client() -> None:
            while data := await box_reader.read(CHUNK):
                writer.write(data)
                await writer.drain()

        try:
            done = await until_first(to_box(), to_client())
            for task in done:
                failure = task.exception() if not task.cancelled() else None
                if failure is not None:
                    log.info("a VNC door client of %s ended: %s", self.box_id, _said(failure))
        finally:
            close = getattr(on_input, "close", None)
            if close is not None:
                await close()


async def _refuse(writer: asyncio.StreamWriter, minor: int, reason: str) -> None:
    """SecurityResult failed; RFB 3.8 tells why."""
    with contextlib.suppress(OSError):
        data = struct.pack(">I", 1)
        if minor >= 8:
            text = reason.encode()
            data += struct.pack(">I", len(text)) + text
        writer.write(data)
        await writer.drain()


def _said(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


__all__ = ["FAILURE_WINDOW_SECS", "MAX_CLIENTS", "MAX_FAILURES", "Failures", "VncDoor"]
