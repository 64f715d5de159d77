"""The MCP SDK's Streamable HTTP transport, served by holmd's own aiohttp app.

The SDK speaks ASGI (`StreamableHTTPSessionManager.handle_request(scope, receive, send)`).
`asgi_handler` turns an aiohttp request into an ASGI `http` scope, feeds its body through
`receive`, and streams what the SDK `send`s back through a `web.StreamResponse`: a JSON
answer, or an SSE stream that stays open while the SDK writes to it. The request has
already passed holmd's middlewares (Host, origin, bearer token, JSON body, size) when it
gets here, so `/mcp` is guarded exactly as the REST API is.

The session manager's task group must be entered and left in one task (anyio's rule), and
aiohttp runs an app's start-up and clean-up as separate steps: `run_manager` holds it in a
task of its own for the app's lifetime.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, MutableMapping
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)

Message = MutableMapping[str, Any]
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Coroutine[Any, Any, None]]

# What one `http.request` message carries at most.
CHUNK = 64 * 1024


def scope_of(request: web.Request, state: dict[str, Any]) -> Scope:
    """The ASGI `http` scope of an aiohttp request, with `state` as what the app reads of
    the request beyond HTTP (the SDK hands it to a tool as its request's `state`)."""
    transport = request.transport
    peer = transport.get_extra_info("peername") if transport else None
    here = transport.get_extra_info("sockname") if transport else None
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode(),
        "query_string": request.query_string.encode(),
        "root_path": "",
        "headers": [(k.lower(), v) for k, v in request.raw_headers],
        "client": _address(peer),
        "server": _address(here),
        "state": state,
    }


def _address(info: object) -> tuple[str, int] | None:
    if isinstance(info, tuple) and len(info) >= 2:
        return str(info[0]), int(info[1])
    return None


async def asgi_handler(
    request: web.Request, app: AsgiApp, state: dict[str, Any]
) -> web.StreamResponse:
    """Run the ASGI `app` for `request` (its scope's `state` is `state`) and answer what it
    sends.

    A client may drop the connection once it has what it wanted (an SSE answer's one
    message); aiohttp then cancels the handler. The app is not cancelled with it, as no ASGI
    server would: it runs in a task of its own, `receive` tells it `http.disconnect`, and
    what it still sends is dropped."""
    response: web.StreamResponse | None = None
    finished = asyncio.Event()
    body_done = False

    async def receive() -> Message:
        nonlocal body_done
        if not body_done:
            chunk = await request.content.read(CHUNK)
            body_done = request.content.at_eof()
            return {"type": "http.request", "body": chunk, "more_body": not body_done}
        # The body was read: what is left to say is that the exchange ended. An SSE
        # response listens for this to stop its stream.
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal response
        if finished.is_set():
            return
        kind = message["type"]
        if kind == "http.response.start":
            response = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", []):
                response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            await response.prepare(request)
        elif kind == "http.response.body":
            assert response is not None, "the body comes after the start of the response"
            body = message.get("body", b"")
            if body:
                await response.write(body)
            if not message.get("more_body", False):
                await response.write_eof()
                finished.set()

    task = asyncio.create_task(app(scope_of(request, state), receive, send), name="mcp request")
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        # The client went away: the app hears it as a disconnect and ends on its own.
        finished.set()
        _running.add(task)
        task.add_done_callback(_ended)
        raise
    except Exception:
        if response is None or not response.prepared:
            raise  # answered as any route's error
        # The answer is under way: it can only be cut short.
        log.exception("the MCP transport failed while answering %s /mcp", request.method)
    finally:
        finished.set()
    if response is None:
        raise web.HTTPInternalServerError(reason="the MCP transport sent no answer")
    return response


# Apps still ending after their client left (kept, so that they are not collected).
_running: set[asyncio.Task[None]] = set()


def _ended(task: asyncio.Task[None]) -> None:
    _running.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.warning("an MCP request failed after its client left", exc_info=task.exception())


@contextlib.asynccontextmanager
async def run_manager(
    running: Callable[[], contextlib.AbstractAsyncContextManager[None]],
) -> AsyncIterator[None]:
    """Hold `running()` (the session manager's `run()`) open in a task of its own until
    the block ends."""
    started = asyncio.Event()
    stop = asyncio.Event()

    async def hold() -> None:
        async with running():
            started.set()
            await stop.wait()

    task = asyncio.create_task(hold(), name="mcp sessions")
    waiting = asyncio.create_task(started.wait())
    await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
    if not started.is_set():
        waiting.cancel()
        await task  # raises why it could not start
    try:
        yield
    finally:
        stop.set()
        await task
