"""The agent's protocol (holm/wire/agent_protocol.py) served from a memory box's desktop, so
that the double's `open_stream(…, "agent")` gives what a real box's agent socket gives: a
server that relays it (provider `holm`) is tested without a real desktop. Each request is
answered in a task of its own, in the order it came, as the agent does."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import msgspec

from holm.adapters.base import Desktop
from holm.errors import BadRequest, HolmError, Internal
from holm.streams import Stream
from holm.wire import agent_protocol as p


async def answer(desktop: Desktop, screens: int, request: p.Request) -> Any:
    match request:
        case p.Ping():
            return "pong"
        case p.Ready() | p.Info():
            infos = [
                p.ScreenInfo(screen=i, display=f"memory:{i}", width=0, height=0)
                for i in range(screens)
            ]
            return p.AgentInfo(pid=0, ready=True, screens=infos, ordered_end=True)
        case p.Act(screen=screen, action=action):
            return await desktop.act(screen, action)
        case p.EndBatch(screen=screen):
            return await desktop.end_batch(screen)
        case p.Frame(screen=screen, have=have, window=window, region=region, scale=scale):
            return await desktop.frame(
                screen,
                have=have,
                window=window,
                region=region,
                scale=scale,
                encoding=request.encoding,
            )
        case p.FrameHash(screen=screen):
            return await desktop.frame_hash(screen)
        case p.AwaitChange(screen=screen, after=after, within_ms=within_ms):
            return await desktop.await_change(screen, after, within_ms)
        case p.DefineApps():
            raise BadRequest("the memory double keeps no catalog of its own")
    raise BadRequest(f"unknown request {type(request).__name__}")


async def serve(desktop: Desktop, screens: int, stream: Stream) -> None:
    """Answer the requests of `stream` until it ends."""
    reader, writer = stream
    tasks: set[asyncio.Task[None]] = set()

    async def one(request: p.Request) -> None:
        try:
            reply: p.Ok | p.Err = p.Ok(request.id, await answer(desktop, screens, request))
        except HolmError as exc:
            reply = p.Err.of(request.id, exc)
        except Exception as exc:  # a bug of the double, told to its caller
            reply = p.Err.of(request.id, Internal(f"{type(exc).__name__}: {exc}"))
        writer.write(p.frame(reply))
        with contextlib.suppress(ConnectionError):
            await writer.drain()

    try:
        while True:
            body = await p.read_frame(reader)
            try:
                request = p.request_decoder.decode(body)
            except msgspec.DecodeError as exc:
                failed = p.request_id_decoder.decode(body).id
                writer.write(p.frame(p.Err.of(failed, BadRequest(str(exc)))))
                continue
            task = asyncio.create_task(one(request))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        for task in list(tasks):
            task.cancel()
        writer.close()


__all__ = ["answer", "serve"]
