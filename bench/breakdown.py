"""Where one REST click's time goes, measured inside holmd's process: `instrument()` wraps
the parts a click passes through with timers, and `route` serves what they measured (and
starts over) at `GET /bench/breakdown`. bench/http_api.py --breakdown uses it; holmd never
does. A part's figure is the time spent in it per click (its calls per click times its mean
call), so the parts of one click can be read side by side with the click as the client saw
it."""

from __future__ import annotations

import functools
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

# Seconds spent in each call of each part since the last read.
SPENT: dict[str, list[float]] = defaultdict(list)


def _timed(name: Callable[..., str] | str, fn: Callable[..., Awaitable[Any]]) -> Any:
    @functools.wraps(fn)
    async def run(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            label = name if isinstance(name, str) else name(*args, **kwargs)
            SPENT[label].append(time.perf_counter() - began)

    return run


def _timed_sync(name: str, fn: Callable[..., Any]) -> Any:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT[name].append(time.perf_counter() - began)

    return run


def instrument() -> None:
    """Wrap the parts of a click; call it before the app is made."""
    from holm.adapters.agent.client import AgentDesktop
    from holm.engine.engine import Engine
    from holm.engine.watcher import FrameWatchers
    from holm.events.local import LocalStore
    from holm.http.routes import screens

    def agent_part(_desktop: Any, _screen: int, action: Any) -> str:
        return f"agent round trip: {type(action).__name__.lower()}"

    Engine.run_batch = _timed("engine.run_batch (all of the batch)", Engine.run_batch)  # type: ignore[method-assign]
    LocalStore.append = _timed("store append + fsync", LocalStore.append)  # type: ignore[method-assign]
    AgentDesktop.act = _timed(agent_part, AgentDesktop.act)  # type: ignore[method-assign]
    AgentDesktop.end_batch = _timed("agent round trip: end_batch", AgentDesktop.end_batch)  # type: ignore[method-assign]
    AgentDesktop.frame_hash = _timed("watcher: frame hash (the agent)", AgentDesktop.frame_hash)  # type: ignore[method-assign]
    FrameWatchers.record = _timed("watcher: record a frame", FrameWatchers.record)  # type: ignore[method-assign]
    screens.json_response = _timed_sync("response encode", screens.json_response)  # type: ignore[assignment]
    _instrument_mcp()


def _instrument_mcp() -> None:
    """The layers an MCP tool call passes through, outermost first: the bridge, the SDK's
    session manager and transport, its dispatcher's task for the request, its runner (the
    request's context and checks, the handler, the result shaped for the wire), holm's
    decoding of the arguments. Some are the SDK's private methods: only this bench reads
    them."""
    from mcp.server.runner import ServerRunner
    from mcp.server.streamable_http import StreamableHTTPServerTransport
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

    from holm.http.mcp import server, tools

    layers: list[tuple[Any, str, str]] = [
        (server, "asgi_handler", "mcp 1 bridge (asgi_handler)"),
        (StreamableHTTPSessionManager, "handle_request", "mcp 2 SDK session manager"),
        (StreamableHTTPServerTransport, "_handle_post_request", "mcp 3 SDK transport: the POST"),
        (JSONRPCDispatcher, "_handle_request", "mcp 4 SDK dispatcher: the request's task"),
        (ServerRunner, "_on_request", "mcp 5 SDK runner: checks, handler, result"),
    ]
    for owner, name, label in layers:
        setattr(owner, name, _timed(label, getattr(owner, name)))
    tools.Tool.decode = _timed_sync("mcp 6 holm: the arguments decoded", tools.Tool.decode)  # type: ignore[method-assign]


@web.middleware
async def timing_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """Outermost: the time the server spent on a request from its parsed headers on."""
    began = time.perf_counter()
    try:
        return await handler(request)
    finally:
        if request.path.endswith("/actions") or request.path == "/mcp":
            SPENT["server: the request, middlewares included"].append(time.perf_counter() - began)


async def read_breakdown(request: web.Request) -> web.Response:
    """What each part spent, per click, since the last read; then start over."""
    clicks = max(1, int(request.query.get("clicks", "1")))
    parts = {
        name: {"calls_per_click": len(spent) / clicks, "ms_per_click": sum(spent) * 1000 / clicks}
        for name, spent in sorted(SPENT.items())
    }
    SPENT.clear()
    return web.json_response(parts)


def add_to(app: web.Application) -> None:
    app.middlewares.insert(0, timing_middleware)
    app.router.add_get("/bench/breakdown", read_breakdown)
