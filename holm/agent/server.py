"""The agent's socket: framed requests in, each answered by its own task as soon as its
work is done, so a slow request never holds up another on the same connection."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from pathlib import Path
from typing import Any

import msgspec
from Xlib import error as xerror

from holm.agent.acts_in_flight import ActsInFlight, all_done
from holm.agent.agent import Agent, Options
from holm.agent.desktop import processes
from holm.agent.handed_pipes import PIPES_SOCKET, Serve, listen_for_pipes
from holm.errors import BadRequest, Failed, HolmError, Internal, ScreenUnavailable
from holm.wire import agent_protocol as p
from holm.wire.spec import AppDefinition

log = logging.getLogger("holm.agent")


def to_holm_error(exc: BaseException) -> HolmError:
    """The one place where what went wrong inside the agent becomes a holm error."""
    match exc:
        case HolmError():
            return exc
        case xerror.ConnectionClosedError() | xerror.DisplayError():
            return ScreenUnavailable(f"the X display is gone: {exc}")
        case xerror.XError():
            return BadRequest(f"the X server refused: {exc}")
        case msgspec.ValidationError() | ValueError():
            return BadRequest(str(exc))
        case OSError():
            return Failed(f"{type(exc).__name__}: {exc}")
        case _:
            log.error("request failed", exc_info=exc)
            return Internal(f"{type(exc).__name__}: {exc}")


class Connection:
    def __init__(
        self, agent: Agent, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.agent = agent
        self.reader = reader
        self.writer = writer
        self.tasks: set[asyncio.Task[None]] = set()
        # The acts being done: an `EndBatch` waits for those sent before it on its screen.
        self.acting = ActsInFlight()
        # The looks before a step whose pixels are not read yet: the acts and batch ends
        # sent after one on its screen wait for it (`p.LookBefore`).
        self.looking = ActsInFlight()

    async def serve(self) -> None:
        try:
            while True:
                self._begin(await p.read_frame(self.reader))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except ValueError as exc:
            log.warning("closing a connection: %s", exc)
        finally:
            for task in self.tasks:
                task.cancel()
            self.writer.close()

    def _begin(self, body: bytes) -> None:
        """Answer one request in a task of its own: a slow one holds up no other."""
        try:
            request = p.request_decoder.decode(body)
        except msgspec.DecodeError as exc:
            try:
                request_id = p.request_id_decoder.decode(body).id
            except msgspec.DecodeError:
                request_id = -1
            error = BadRequest(f"a request the agent cannot read: {exc}")
            self._reply(p.Err.of(request_id, error))
            return
        after: list[asyncio.Future[Any]] = []
        if isinstance(request, p.EndBatch):
            after = self.acting.pending(request.screen)
        if isinstance(request, p.Act | p.EndBatch):
            after += self.looking.pending(request.screen)
        read: asyncio.Future[None] | None = None
        if isinstance(request, p.LookBefore):
            read = asyncio.get_running_loop().create_future()
            self.looking.add(request.screen, read)
        task = asyncio.create_task(self._answer(request, after, read))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        if isinstance(request, p.Act):
            self.acting.add(request.screen, task)

    async def _answer(
        self,
        request: p.Request,
        after: list[asyncio.Future[Any]],
        read: asyncio.Future[None] | None = None,
    ) -> None:
        reply: p.Ok | p.Err
        try:
            await all_done(after)
            if isinstance(request, p.LookBefore) and read is not None:
                reply = p.Ok(request.id, await self.agent.look_before(request, read))
            else:
                reply = p.Ok(request.id, await self.agent.answer(request))
        except asyncio.CancelledError:
            if read is not None and not read.done():
                read.set_result(None)
            raise
        except Exception as exc:
            reply = p.Err.of(request.id, to_holm_error(exc))
        self._reply(reply)
        # Flow control, as for every writer of a stream: wait while holmd reads behind.
        with contextlib.suppress(ConnectionError):
            await self.writer.drain()

    def _reply(self, reply: p.Ok | p.Err) -> None:
        with contextlib.suppress(ConnectionError):
            self.writer.write(p.frame(reply))


async def serve(options: Options, apps: dict[str, AppDefinition] | None = None) -> None:
    """Run the agent until SIGTERM (or SIGINT); then end every process of the box."""
    options.run_dir.mkdir(parents=True, exist_ok=True)
    processes.become_subreaper()
    stop_reaper = threading.Event()
    processes.start_reaper(stop_reaper)
    agent = Agent(options)
    agent.catalog.define(apps or {})
    socket_path = options.run_dir / "agent.sock"
    # Before agent.sock: a relay that has reached agent.sock finds it (handed_pipes.py).
    pipes_path = options.run_dir / PIPES_SOCKET
    pipes: asyncio.Task[None] | None = None
    try:
        pipes = await listen_for_pipes(pipes_path, _serve_on(agent), p.MAX_FRAME_BYTES)
    except OSError as exc:
        # Only a remote docker box's relay uses it, and relays without it.
        log.warning("no %s (%s): the agent is served on agent.sock only", PIPES_SOCKET, exc)
    server = await _listen(agent, socket_path)
    log.info("serving on %s", socket_path)

    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    bring_up = asyncio.create_task(agent.bring_up())
    await stopping.wait()
    log.info("stopping")
    bring_up.cancel()
    server.close()
    if pipes is not None:
        pipes.cancel()
    await agent.close()
    await asyncio.to_thread(processes.end_all)
    stop_reaper.set()
    socket_path.unlink(missing_ok=True)
    pipes_path.unlink(missing_ok=True)


def _serve_on(agent: Agent) -> Serve:
    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await Connection(agent, reader, writer).serve()

    return on_connect


async def _listen(agent: Agent, socket_path: Path) -> asyncio.Server:
    socket_path.unlink(missing_ok=True)
    on_connect = _serve_on(agent)

    # The socket is created private: nobody but the box's owner may drive the box.
    old = os.umask(0o177)
    try:
        server = await asyncio.start_unix_server(
            on_connect, path=str(socket_path), limit=p.MAX_FRAME_BYTES
        )
    finally:
        os.umask(old)
    os.chmod(socket_path, 0o600)
    return server
