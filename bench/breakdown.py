"""Where one REST click's time goes, measured inside holmd's process: `instrument()` wraps
the parts a click passes through with timers, and `route` serves what they measured (and
starts over) at `GET /bench/breakdown`. bench/http_api.py --breakdown uses it; holmd never
does. A part's figure is the time spent in it per click (its calls per click times its mean
call), so the parts of one click can be read side by side with the click as the client saw
it.

`GET /bench/timeline` serves when each part began and ended within a REST batch, as the
median time since the request began, over the batches since the last read: the parts of a
click one after another, with the gaps between them (a hop to a thread, a turn of the event
loop) that no part's own figure shows.

`GET /bench/breakdown?on=0` turns the timers off (and `on=1` back on): a bench that times
requests for its figures times them without the timers' own cost in them.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import statistics
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

# Seconds spent in each call of each part since the last read.
SPENT: dict[str, list[float]] = defaultdict(list)
# When parts began and ended during the REST batch being answered (one at a time in the
# benches), and those of the batches answered since the last read.
MOMENTS: list[tuple[str, float]] = []
TIMELINES: list[list[tuple[str, float]]] = []
# Whether the timers time (`GET /bench/breakdown?on=`).
ON = [True]


def _moment(label: str) -> None:
    MOMENTS.append((label, time.perf_counter()))


def _timed(name: Callable[..., str] | str, fn: Callable[..., Awaitable[Any]]) -> Any:
    @functools.wraps(fn)
    async def run(*args: Any, **kwargs: Any) -> Any:
        if not ON[0]:
            return await fn(*args, **kwargs)
        label = name if isinstance(name, str) else name(*args, **kwargs)
        began = time.perf_counter()
        _moment(f"{label} begins")
        try:
            return await fn(*args, **kwargs)
        finally:
            SPENT[label].append(time.perf_counter() - began)
            _moment(f"{label} ends")

    return run


def _timed_sync(name: str, fn: Callable[..., Any]) -> Any:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        if not ON[0]:
            return fn(*args, **kwargs)
        began = time.perf_counter()
        _moment(f"{name} begins")
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT[name].append(time.perf_counter() - began)
            _moment(f"{name} ends")

    return run


def _timed_sent(name: Callable[..., str] | str, fn: Callable[..., Any]) -> Any:
    """For a call that sends its request when called and answers a future (AgentDesktop's
    act, end_batch and frame): timed from the call to the future's end, and still sent at
    once, so the timers do not move the request to when it is awaited."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        answer = fn(*args, **kwargs)
        if not ON[0]:
            return answer
        label = name if isinstance(name, str) else name(*args, **kwargs)
        began = time.perf_counter()
        _moment(f"{label} begins")
        future = asyncio.ensure_future(answer)

        def ended(_: object) -> None:
            SPENT[label].append(time.perf_counter() - began)
            _moment(f"{label} ends")

        future.add_done_callback(ended)
        return future

    return run


def instrument() -> None:
    """Wrap the parts of a click; call it before the app is made."""
    from holm.adapters.agent_desktop import AgentDesktop
    from holm.engine.engine import Engine
    from holm.engine.watcher import FrameWatchers
    from holm.events.local import LocalStore
    from holm.http.routes import screens

    def agent_part(_desktop: Any, _screen: int, action: Any) -> str:
        return f"agent round trip: {type(action).__name__.lower()}"

    Engine.run_batch = _timed("engine.run_batch (all of the batch)", Engine.run_batch)  # type: ignore[method-assign]
    LocalStore.append = _timed("store append + fsync", LocalStore.append)  # type: ignore[method-assign]
    AgentDesktop.act = _timed_sent(agent_part, AgentDesktop.act)  # type: ignore[method-assign]
    AgentDesktop.end_batch = _timed_sent("agent round trip: end_batch", AgentDesktop.end_batch)  # type: ignore[method-assign]
    AgentDesktop.frame_hash = _timed("watcher: frame hash (the agent)", AgentDesktop.frame_hash)  # type: ignore[method-assign]
    FrameWatchers.record = _timed("watcher: record a frame", FrameWatchers.record)  # type: ignore[method-assign]
    screens.json_response = _timed_sync("response encode", screens.json_response)  # type: ignore[attr-defined]
    # The store's commit (its writer task: the lock, the lines encoded, the hop to its
    # thread and back) and the thread's part (write, fdatasync, index).
    LocalStore._commit = _timed("store: commit", LocalStore._commit)  # type: ignore[method-assign]
    LocalStore._write = _timed_sync("store: its thread writes and fsyncs", LocalStore._write)  # type: ignore[method-assign]
    _instrument_mcp()
    gc.callbacks.append(_gc_timed)


_GC_BEGAN: list[float] = []


def _gc_timed(phase: str, info: dict[str, int]) -> None:
    """Python's collections of cycles, by generation: a pause of the whole process (of any
    thread), which lands on whatever request is being answered."""
    if phase == "start":
        _GC_BEGAN[:] = [time.perf_counter()]
    elif _GC_BEGAN:
        SPENT[f"gc: a collection of generation {info['generation']}"].append(
            time.perf_counter() - _GC_BEGAN.pop()
        )


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
    if not ON[0]:
        untimed: web.StreamResponse = await handler(request)
        return untimed
    batch = request.path.endswith("/actions")
    if batch:
        MOMENTS.clear()
    began = time.perf_counter()
    try:
        response: web.StreamResponse = await handler(request)
        return response
    finally:
        if batch or request.path == "/mcp":
            SPENT["server: the request, middlewares included"].append(time.perf_counter() - began)
        if batch:
            TIMELINES.append(
                [("the request begins", began), *MOMENTS, ("the request ends", time.perf_counter())]
            )


async def read_breakdown(request: web.Request) -> web.Response:
    """What each part spent, per click, since the last read; then start over."""
    if "on" in request.query:
        ON[0] = request.query["on"] == "1"
    clicks = max(1, int(request.query.get("clicks", "1")))
    parts = {
        name: {"calls_per_click": len(spent) / clicks, "ms_per_click": sum(spent) * 1000 / clicks}
        for name, spent in sorted(SPENT.items())
    }
    SPENT.clear()
    return web.json_response(parts)


async def read_timeline(request: web.Request) -> web.Response:
    """Each moment's median time after its request began, in ms, and in how many of the
    batches since the last read it came (a part some batches pass through, as the
    watcher's, comes in fewer); then start over. A part's first moment in a batch counts."""
    after: dict[str, list[float]] = defaultdict(list)
    for moments in TIMELINES:
        start, seen = moments[0][1], set()
        for label, at in moments:
            if label not in seen:
                seen.add(label)
                after[label].append((at - start) * 1000)
    rows = [
        {"moment": label, "ms": statistics.median(times), "of": len(times)}
        for label, times in after.items()
    ]
    count = len(TIMELINES)
    TIMELINES.clear()
    return web.json_response({"batches": count, "moments": sorted(rows, key=lambda row: row["ms"])})


def add_to(app: web.Application) -> None:
    app.middlewares.insert(0, timing_middleware)
    app.router.add_get("/bench/breakdown", read_breakdown)
    app.router.add_get("/bench/timeline", read_timeline)
