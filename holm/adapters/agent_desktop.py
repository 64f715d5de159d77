"""`AgentDesktop`: a box's `Desktop` over one connection to its agent.

Calls are multiplexed on the connection by request id, so concurrent calls (a capture on
one screen, a click on another) run concurrently in the agent. `act`, `end_batch` and
`frame` send their request when they are called and answer a future, so that a batch's
steps and its end go out one behind the other with no task between them. Errors come back
as `holm.errors` classes; a lost connection fails every call in flight, and every later
one, with `Transport` (retryable: the runtime may reconnect).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from holm.agent.acts_in_flight import ActsInFlight
from holm.box_socket import open_box_connection
from holm.errors import ERRORS_BY_CODE, HolmError, Internal, Timeout, Transport
from holm.streams import Stream
from holm.wire import agent_protocol as p
from holm.wire.actions import Action, Tabs, Windows
from holm.wire.results import ActionResult, TabList, WindowList
from holm.wire.runtime import BatchEnd, BrowserStarts, FrameResult, Held, Released
from holm.wire.spec import AppDefinition
from holm.wire.values import PNG, Encoding, Region

T = TypeVar("T")

# How long a new connection waits for the agent's info (`AgentConnections.connect`).
INFO_WITHIN_S = 5.0

_decoders: dict[Any, msgspec.msgpack.Decoder[Any]] = {}
# What `end_batch` answers: a `BatchEnd`, or an older agent's `[Released, Held]`.
_BATCH_END: Any = BatchEnd | tuple[Released, Held]


def _decode(raw: msgspec.Raw, kind: type[T]) -> T:
    decoder = _decoders.get(kind)
    if decoder is None:
        decoder = _decoders[kind] = msgspec.msgpack.Decoder(kind)
    value: T = decoder.decode(raw)
    return value


class AgentDesktop:
    """Implements `holm.adapters.base.Desktop`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        # The calls sent and not answered: their futures and the types their answers decode to.
        self._waiting: dict[int, tuple[asyncio.Future[Any], Any]] = {}
        self._lost: str | None = None
        # Whether the agent does an `EndBatch` after the acts on its screen sent before
        # it (told by `ready` and `info`); until told, this side waits for them itself.
        self._ordered_end = False
        # Whether the agent knows `LookBefore` (told as `ordered_end` is).
        self._looks_before = False
        # The acts asked and not answered yet.
        self._acting = ActsInFlight()
        self._reading = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, socket_path: str | Path) -> AgentDesktop:
        try:
            reader, writer = await open_box_connection(socket_path, limit=p.MAX_FRAME_BYTES)
        except OSError as exc:
            raise Transport(f"cannot reach the box's agent at {socket_path}: {exc}") from None
        return cls(reader, writer)

    @classmethod
    async def connect_when_up(cls, socket_path: str | Path, within_s: float) -> AgentDesktop:
        """Connect, retrying while the agent has not created its socket yet."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within_s
        while True:
            try:
                return await cls.connect(socket_path)
            except Transport:
                if loop.time() >= deadline:
                    raise
            await asyncio.sleep(0.05)

    @property
    def connected(self) -> bool:
        """False once the connection is lost or closed (a runtime then connects anew)."""
        return self._lost is None

    async def _read(self) -> None:
        why = "the agent closed the connection"
        try:
            while True:
                body = await p.read_frame(self._reader)
                reply = p.response_decoder.decode(body)
                waiting = self._waiting.pop(reply.id, None)
                if waiting is None or waiting[0].done():
                    continue
                future, kind = waiting
                if isinstance(reply, p.Err):
                    cls = ERRORS_BY_CODE.get(reply.code, Internal)
                    future.set_exception(cls(reply.message, retryable=reply.retryable))
                    continue
                try:
                    future.set_result(_decode(reply.value, kind))
                except (ValueError, msgspec.DecodeError) as exc:
                    # An answer of the wrong shape fails its call, not the connection.
                    future.set_exception(exc)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except (ValueError, msgspec.DecodeError) as exc:
            why = f"the agent sent something unreadable: {exc}"
        except asyncio.CancelledError:
            why = "the connection was closed"
        self._lose(why)

    def _lose(self, why: str) -> None:
        self._lost = why
        for future, _ in self._waiting.values():
            if not future.done():
                future.set_exception(Transport(f"lost the box's agent: {why}"))
        self._waiting.clear()
        self._writer.close()

    def send(self, request: p.Request, kind: Any) -> asyncio.Future[Any]:
        """Send one request now; the future answers it decoded as `kind` (and fails with
        `Transport` when the connection is lost, before or after)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self._lost is not None:
            future.set_exception(Transport(f"lost the box's agent: {self._lost}"))
            return future
        self._waiting[request.id] = (future, kind)
        # A caller that stops waiting leaves no entry behind for an answer that never comes.
        future.add_done_callback(lambda _: self._waiting.pop(request.id, None))
        if isinstance(request, p.Act):
            self._acting.add(request.screen, future)
        try:
            self._writer.write(p.frame(request))
        except (ConnectionError, RuntimeError) as exc:
            self._lose(str(exc))
        return future

    async def call(self, request: p.Request, kind: type[T]) -> T:
        """Send one request and decode its answer as `kind`."""
        future = self.send(request, kind)
        try:
            await self._writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            self._lose(str(exc))
        result: T = await future
        return result

    def _told(self, info: p.AgentInfo) -> p.AgentInfo:
        self._ordered_end = info.ordered_end
        self._looks_before = info.looks_before
        return info

    def _id(self) -> int:
        return next(self._ids)

    # Agent

    async def ping(self) -> None:
        await self.call(p.Ping(id=self._id()), str)

    async def ready(self, timeout: float) -> p.AgentInfo:
        """Wait until every screen is up (Chromium's window mapped on each); the agent's
        error names what failed."""
        timeout_ms = max(1, int(timeout * 1000))
        try:
            return self._told(
                await asyncio.wait_for(
                    self.call(p.Ready(id=self._id(), timeout_ms=timeout_ms), p.AgentInfo),
                    timeout + 5,
                )
            )
        except TimeoutError:
            raise Timeout(f"the box's agent did not answer within {timeout} s") from None

    async def info(self) -> p.AgentInfo:
        return self._told(await self.call(p.Info(id=self._id()), p.AgentInfo))

    async def define_apps(self, apps: dict[str, AppDefinition]) -> list[str]:
        return await self.call(p.DefineApps(id=self._id(), apps=apps), list[str])

    # Desktop

    def act(self, screen: int, action: Action) -> asyncio.Future[ActionResult]:
        return self.send(p.Act(id=self._id(), screen=screen, action=action), type(action).Result)

    def end_batch(self, screen: int) -> Awaitable[BatchEnd]:
        if self._ordered_end:
            # The agent does it after the acts on the screen sent before it.
            return self.send(p.EndBatch(id=self._id(), screen=screen), BatchEnd)
        return self._end_batch_after_acts(screen)

    async def _end_batch_after_acts(self, screen: int) -> BatchEnd:
        """For an agent that may do the end beside the acts before it: they end first."""
        await self._acting.done(screen)
        request = p.EndBatch(id=self._id(), screen=screen)
        ended: BatchEnd | tuple[Released, Held] = await self.call(request, _BATCH_END)
        if isinstance(ended, BatchEnd):
            return ended
        # An agent from before `BatchEnd` (a box an older holmd started, which outlives it
        # and is adopted) tells only what it released and holds: the lists are asked for.
        released, held = ended
        windows = await self.call(p.Act(id=self._id(), screen=screen, action=Windows()), WindowList)
        try:
            tabs = await self.call(p.Act(id=self._id(), screen=screen, action=Tabs()), TabList)
        except HolmError:
            tabs = TabList(tabs=[])  # no Chromium on the screen, or not up
        return BatchEnd(released=released, held=held, windows=windows.windows, tabs=tabs.tabs)

    def frame(
        self,
        screen: int,
        *,
        have: str | None = None,
        window: str | None = None,
        region: Region | None = None,
        scale: int = 100,
        encoding: Encoding = PNG,
    ) -> asyncio.Future[FrameResult]:
        request = p.Frame(
            id=self._id(),
            screen=screen,
            have=have,
            window=window,
            region=region,
            scale=scale,
            encoding=encoding,
        )
        return self.send(request, FrameResult)

    async def frame_hash(self, screen: int) -> tuple[str, int, int]:
        return await self.call(p.FrameHash(id=self._id(), screen=screen), tuple[str, int, int])

    def look_before(
        self, screen: int, have: str | None, with_png: bool = False
    ) -> asyncio.Future[FrameResult] | None:
        if not self._looks_before:
            return None
        request = p.LookBefore(id=self._id(), screen=screen, have=have, with_png=with_png)
        return self.send(request, FrameResult)

    def kept_frame(self, screen: int, digest: str) -> asyncio.Future[FrameResult]:
        return self.send(p.KeptFrame(id=self._id(), screen=screen, hash=digest), FrameResult)

    async def await_change(self, screen: int, after: int, within_ms: int) -> int:
        request = p.AwaitChange(id=self._id(), screen=screen, after=after, within_ms=within_ms)
        return await self.call(request, int)

    async def await_browser(self, screen: int, after: int, within_ms: int) -> BrowserStarts:
        request = p.AwaitBrowser(id=self._id(), screen=screen, after=after, within_ms=within_ms)
        return await self.call(request, BrowserStarts)

    async def close(self) -> None:
        if self._lost is None:
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading
        self._writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()


class AgentConnections:
    """The one shared connection to each box's agent that a runtime keeps: the same
    bookkeeping for every runtime, which differ only in where the socket is."""

    def __init__(self) -> None:
        self._desktops: dict[str, AgentDesktop] = {}

    def live(self, box_id: str) -> AgentDesktop | None:
        """The box's connection when it is still up."""
        desktop = self._desktops.get(box_id)
        return desktop if desktop is not None and desktop.connected else None

    def keep(self, box_id: str, desktop: AgentDesktop) -> AgentDesktop:
        self._desktops[box_id] = desktop
        return desktop

    async def connect(self, box_id: str, socket_path: str | Path) -> AgentDesktop:
        return await self._told(box_id, await AgentDesktop.connect(socket_path))

    async def adopt(self, box_id: str, stream: Stream) -> AgentDesktop:
        """The box's connection over `stream` (opened with a reader limit of the agent's
        largest frame), however the runtime reached the agent."""
        return await self._told(box_id, AgentDesktop(*stream))

    async def _told(self, box_id: str, desktop: AgentDesktop) -> AgentDesktop:
        try:
            # What the agent can do (`AgentInfo.ordered_end`) is told by its info. An agent
            # slow to tell (a box under load) is used as one that cannot, rather than
            # holding every caller of this box behind the runtime's connect lock.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(desktop.info(), INFO_WITHIN_S)
        except BaseException:
            await desktop.close()
            raise
        return self.keep(box_id, desktop)

    async def drop(self, box_id: str) -> None:
        desktop = self._desktops.pop(box_id, None)
        if desktop is not None:
            await desktop.close()

    async def close(self) -> None:
        desktops = list(self._desktops.values())
        self._desktops.clear()
        # At once: a connection to a host that went away may wait out TLS's close (a
        # bound of seconds each), and a runtime of many boxes would wait those one by one.
        await asyncio.gather(*(desktop.close() for desktop in desktops))


__all__ = ["AgentConnections", "AgentDesktop", "HolmError"]
