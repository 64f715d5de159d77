"""The MCP SDK's Streamable HTTP transport, served by holmd's own aiohttp app.

The SDK speaks ASGI (`StreamableHTTPSessionManager.handle_request(scope, receive, send)`).
`asgi_handler` turns an aiohttp request into an ASGI `http` scope, feeds its body through
`receive`, and answers what the SDK `send`s: a JSON answer as one `web.Response`, an SSE
stream, which stays open while the SDK writes to it, through a `web.StreamResponse`. The request has
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
from multidict import CIMultiDict

log = logging.getLogger(__name__)

Message = MutableMapping[str, Any]
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Coroutine[Any, Any, None]]


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

    A POST or a DELETE is answered once (the session manager answers JSON): the app runs in
    this handler's task, and an answer the app sends whole is one `web.Response`, written
    with its headers in one go as soon as it is sent (a task of its own cost each call a
    turn of the event loop each way, and a stream a second write). A GET is the SDK's event
    stream, which stays open: a client that drops it makes aiohttp cancel the handler (when
    the server cancels handlers, as the test server does), and the app is not cancelled
    with it, as no ASGI server would: it runs in a task of its own, `receive` tells it
    `http.disconnect`, and what it still sends is dropped."""
    exchange = _Exchange(request, await request.read())
    run = app(scope_of(request, state), exchange.receive, exchange.send)
    try:
        if request.method == "GET":
            await _apart(run, exchange)
        else:
            await run
    except Exception:
        if exchange.response is None:
            raise  # answered as any route's error
        # The answer is under way (or whole): it can only be cut short.
        log.exception("the MCP transport failed while answering %s /mcp", request.method)
    finally:
        exchange.finished.set()
    if exchange.response is None:
        raise web.HTTPInternalServerError(reason="the MCP transport sent no answer")
    return exchange.response


class _Exchange:
    """One HTTP exchange as the ASGI app sees it: its body, read once (aiohttp bounds it by
    the app's `client_max_size`), and what the app answers."""

    def __init__(self, request: web.Request, body: bytes) -> None:
        self.request = request
        self.body: bytes | None = body
        self.start: Message | None = None
        # Set once the app sent a whole answer, or began streaming one.
        self.response: web.StreamResponse | None = None
        self.finished = asyncio.Event()

    async def receive(self) -> Message:
        if self.body is not None:
            body, self.body = self.body, None
            return {"type": "http.request", "body": body, "more_body": False}
        # The body was read: what is left to say is that the exchange ended. An SSE
        # response listens for this to stop its stream.
        await self.finished.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self.finished.is_set():
            return
        kind = message["type"]
        if kind == "http.response.start":
            self.start = message
            if self.request.method == "GET":
                # An event stream: its headers go now, not with its first event, which may
                # come much later (a client waits for the headers before it listens).
                await self._stream(b"", more=True)
            return
        if kind != "http.response.body":
            return
        body: bytes = message.get("body", b"")
        more: bool = message.get("more_body", False)
        if self.response is None and not more:
            # The whole answer at once: written now, headers and body together, so that the
            # client has it while the SDK finishes the request.
            whole = web.Response(
                status=self._status(), body=body, headers=self._headers(length=False)
            )
            self.response = whole
            await whole.prepare(self.request)
            await whole.write_eof()
            self.finished.set()
            return
        await self._stream(body, more)

    async def _stream(self, body: bytes, more: bool) -> None:
        """Write `body` to the answer as a stream, its headers first, and end it unless
        `more` comes."""
        try:
            if self.response is None:
                self.response = web.StreamResponse(status=self._status(), headers=self._headers())
                await self.response.prepare(self.request)
            if body:
                await self.response.write(body)
            if not more:
                await self.response.write_eof()
                self.finished.set()
        except ConnectionResetError:
            # The client left mid-stream (an event stream it closed): nobody is left to
            # tell, and the app hears it as a disconnect.
            self.finished.set()

    def _status(self) -> int:
        assert self.start is not None, "the body comes after the start of the response"
        return int(self.start["status"])

    def _headers(self, length: bool = True) -> CIMultiDict[str]:
        """The app's headers; without its `content-length` when aiohttp sets it."""
        assert self.start is not None, "the body comes after the start of the response"
        headers: CIMultiDict[str] = CIMultiDict()
        for name, value in self.start.get("headers", []):
            if length or name.lower() != b"content-length":
                headers.add(name.decode("latin-1"), value.decode("latin-1"))
        return headers


async def _apart(run: Coroutine[Any, Any, None], exchange: _Exchange) -> None:
    """Run the app in a task of its own, which the handler's cancellation does not end:
    the app hears a disconnect instead."""
    task = asyncio.create_task(run, name="mcp request")
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        # The client went away: the app hears it as a disconnect and ends on its own.
        exchange.finished.set()
        _running.add(task)
        task.add_done_callback(_ended)
        raise


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
