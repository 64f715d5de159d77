"""The viewer socket: a WebSocket relayed to a stream to a screen's x11vnc (the engine opens
it, whatever way the box's runtime reaches the box), binary frames both ways (as websockify
does).

Back-pressure both ways, so that neither a slow viewer nor a slow x11vnc grows holmd's
memory: the relay reads x11vnc in chunks of `CHUNK` and awaits each WebSocket send (aiohttp
waits for its transport to drain past 64 KiB); it reads the next WebSocket message only
after the last one's bytes were written to x11vnc and drained; a partial RFB message held
between reads is bounded by `rfb.MAX_PENDING`, a WebSocket message by `MAX_MESSAGE`.

In `view` mode, the client's input messages (keys, pointer, clipboard, resizes) are dropped
here: they never reach x11vnc. A stream the relay cannot cut into messages is closed.

The relay says x11vnc's `ProtocolVersion` to the viewer itself, as soon as the WebSocket is
open, and passes the viewer's answer on at once; x11vnc's own greeting, when it comes, is
checked and dropped. The bytes each side sees are those of a direct connection, but
x11vnc hears its client first: LibVNCServer waits up to 100 ms after accepting a client
for a WebSocket's `GET ` (it peeks 4 bytes) and sends its greeting only then, unless what it
peeks is `RFB ` (bench/viewer.py: the first frame came 100 ms sooner).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable, Iterator

from aiohttp import WSMsgType, web

from holm.streams import close_stream, until_first
from holm.wire.api import ViewerMode

from .rfb import ClientStream, Message, RfbError
from .tickets import Tickets

log = logging.getLogger(__name__)

# A whole 1280×800 raw update is 4 MiB: read in 64 KiB, it crossed as 64 WebSocket messages,
# each awaited, and the relay gave 27 % of the updates a direct client got (bench/viewer.py);
# 1 MiB still bounds what one viewer holds.
CHUNK = 1024 * 1024
MAX_MESSAGE = 1 << 20
# What LibVNCServer (x11vnc's) has always said first: RFB 3.8.
SERVER_VERSION = b"RFB 003.008\n"


class LiveViewers:
    """The relays open now, by box, screen and mode (for `GET …/viewers`), and by ticket
    (to close the ones of a revoked ticket)."""

    def __init__(self) -> None:
        self._open: Counter[tuple[str, int, ViewerMode]] = Counter()
        self._stops: dict[str, set[asyncio.Event]] = {}

    def count(self, box_id: str, screen: int, mode: ViewerMode) -> int:
        return self._open[(box_id, screen, mode)]

    @contextlib.contextmanager
    def opened(
        self, box_id: str, screen: int, mode: ViewerMode, ticket: str
    ) -> Iterator[asyncio.Event]:
        """Count a relay while it is open; the event it yields is set to close it."""
        key = (box_id, screen, mode)
        stop = asyncio.Event()
        self._open[key] += 1
        self._stops.setdefault(ticket, set()).add(stop)
        try:
            yield stop
        finally:
            self._open[key] -= 1
            if self._open[key] <= 0:
                del self._open[key]
            stops = self._stops.get(ticket)
            if stops is not None:
                stops.discard(stop)
                if not stops:
                    del self._stops[ticket]

    def close(self, tickets: set[str]) -> int:
        """Close the relays opened with these tickets; how many."""
        closed = 0
        for ticket in tickets:
            for stop in self._stops.get(ticket, ()):
                stop.set()
                closed += 1
        return closed


TICKETS = web.AppKey("tickets", Tickets)
LIVE = web.AppKey("live_viewers", LiveViewers)

OnInput = Callable[[Message], None]


async def relay(
    request: web.Request,
    stream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    mode: ViewerMode,
    on_input: OnInput | None = None,
    stop: asyncio.Event | None = None,
) -> web.WebSocketResponse:
    """Answer the WebSocket upgrade and pump between it and `stream` (the screen's VNC
    server, opened with a reader limit of `CHUNK`) until either side closes, or `stop` is
    set; the stream is closed after. Called only after the ticket was checked."""
    reader, writer = stream
    # No permessage-deflate (browsers offer it): RFB's encodings are compressed already,
    # and deflating a raw 4 MB update costs holmd's loop more than it saves.
    ws = web.WebSocketResponse(protocols=("binary",), max_msg_size=MAX_MESSAGE, compress=False)
    try:
        await ws.prepare(request)
    except BaseException:
        writer.close()
        raise

    async def to_box() -> None:
        stream = ClientStream()
        async for msg in ws:
            if msg.type != WSMsgType.BINARY:
                if msg.type == WSMsgType.TEXT:
                    continue
                return
            for message in stream.feed(msg.data):
                if message.is_input:
                    if mode == "view":
                        continue
                    if on_input is not None:
                        on_input(message)
                writer.write(message.data)
            await writer.drain()

    async def to_viewer() -> None:
        await ws.send_bytes(SERVER_VERSION)
        greeting = await reader.readexactly(len(SERVER_VERSION))
        if greeting != SERVER_VERSION:
            raise RfbError(f"the screen's VNC server speaks {greeting!r}, not RFB 3.8")
        while True:
            chunk = await reader.read(CHUNK)
            if not chunk:
                return
            await ws.send_bytes(chunk)

    async def stopped() -> None:
        if stop is not None:
            await stop.wait()
        else:
            await asyncio.Future()

    try:
        done = await until_first(stopped(), to_box(), to_viewer())
        for task in done:
            failure = task.exception() if not task.cancelled() else None
            if isinstance(failure, RfbError):
                log.warning("closed a viewer of %s: %s", request.path, failure)
            elif failure is not None:
                log.warning("a viewer relay of %s ended: %r", request.path, failure)
    finally:
        await close_stream(stream)
        await ws.close()
    return ws


__all__ = [
    "CHUNK",
    "LIVE",
    "MAX_MESSAGE",
    "SERVER_VERSION",
    "TICKETS",
    "LiveViewers",
    "OnInput",
    "relay",
]
