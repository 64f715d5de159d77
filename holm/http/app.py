"""The one factory of holmd's aiohttp application, used by `holmd` and the tests alike."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping

from aiohttp import web

from holm.adapters.base import Runtime
from holm.config import Config, server_id_of
from holm.engine import Engine
from holm.engine.reaper import every
from holm.events.shared_docs import shared_doc_of
from holm.events.store import TraceStore

from .access import access_of
from .forwarding import forwarding_middleware, replica_session
from .idempotency import KEYS, KeyCache, idempotency_middleware
from .mcp import ROUTES as MCP_ROUTES
from .mcp import setup_mcp
from .middlewares import body_size_middleware, errors_middleware, guards_middleware
from .openapi import openapi_route
from .page_grants import PAGE_GRANTS, PageGrants
from .routes import ALL_ROUTES
from .routes.cdp import GRANTS, Grants
from .routing import ACCESS, CONFIG, ENGINE, ROUTES, WORKSPACES, Route
from .viewer.doors import DOORS, Doors
from .viewer.relay import LIVE, TICKETS, LiveViewers
from .viewer.tickets import Tickets
from .workspaces import Workspaces

log = logging.getLogger(__name__)


def create_app(
    config: Config,
    *,
    runtimes: Mapping[str, Runtime] | None = None,
    store: TraceStore | None = None,
) -> web.Application:
    """The app for `config`. Runtimes and store default to those the config names
    (`make_runtimes`, `open_store`) and are then opened and closed with the app; given
    ones belong to the caller.

    Who may call it is settled here (holm.http.access): with `server_auth="token"` and no
    `server_token`, the token is read from, or first made in, `<state_dir>/token`. A
    setting that leaves the API open off loopback raises `ValueError`, as does a
    workspaces file (`<state_dir>/workspaces.json`) that cannot be read."""
    access = access_of(config)
    workspaces = Workspaces.load(config.state_dir)
    app = web.Application(
        client_max_size=config.max_body_bytes,
        middlewares=[
            errors_middleware,
            # Before the guards: the box's own holmd checks the token (forwarding.py).
            forwarding_middleware,
            guards_middleware,
            body_size_middleware,
            idempotency_middleware,
        ],
    )
    app[CONFIG] = config
    app[ACCESS] = access
    app[WORKSPACES] = workspaces
    app[KEYS] = KeyCache()
    app[TICKETS] = Tickets()
    app[GRANTS] = Grants()
    app[PAGE_GRANTS] = PageGrants()
    app[LIVE] = LiveViewers()
    declared: dict[tuple[str, str], Route] = {}
    # `/mcp` passes the same guards as every declared route.
    for route in [*declared_routes(), *MCP_ROUTES]:
        if route.method == "GET":
            # HEAD too, as HTTP wants of every GET; it passes the same guards.
            resource = app.router.add_get(route.path, route.handler).resource
            methods: tuple[str, ...] = ("GET", "HEAD")
        else:
            resource = app.router.add_route(route.method, route.path, route.handler).resource
            methods = (route.method,)
        if route.method == "*":
            methods = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
        assert resource is not None
        for method in methods:
            declared[(method, resource.canonical)] = route
    app[ROUTES] = declared

    async def engine_context(app: web.Application) -> AsyncIterator[None]:
        async with _opened(config, runtimes, store) as engine:
            # A cleanup context runs before the app is frozen, when its state may change.
            app[ENGINE] = engine
            async with _shared_workspaces(engine, workspaces):
                doors = app[DOORS] = Doors(engine, config)
                doors.start()
                try:
                    yield
                finally:
                    await doors.close()

    app.cleanup_ctx.append(engine_context)
    app.cleanup_ctx.append(replica_session)
    # After the engine, so that MCP sessions end before it closes.
    setup_mcp(app)
    return app


def declared_routes() -> list[Route]:
    """Every route of the REST API, the OpenAPI document's own included. `/mcp` is not one:
    it speaks JSON-RPC (MCP), whose errors are not the REST error body, and MCP's own
    `tools/list` describes it (docs/mcp.md)."""
    routes = [*ALL_ROUTES]
    return [*routes, openapi_route(routes)]


# How often a replica reads the workspaces another holmd changed (a removed key stops
# working everywhere within this; an unknown key is looked up at once, guards_middleware).
WORKSPACES_REFRESH_SECS = 1.0


@contextlib.asynccontextmanager
async def _shared_workspaces(engine: Engine, workspaces: Workspaces) -> AsyncIterator[None]:
    """With replicas, the workspaces live in PostgreSQL and are read again every second."""
    doc = shared_doc_of(engine.store, "workspaces") if engine.ownership is not None else None
    if doc is None:
        yield
        return
    await workspaces.share(doc)
    # `follow`: an outage of the database is one line in the log, not a traceback a second.
    task = asyncio.create_task(every(WORKSPACES_REFRESH_SECS, workspaces.follow), name="workspaces")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@contextlib.asynccontextmanager
async def _opened(
    config: Config, runtimes: Mapping[str, Runtime] | None, store: TraceStore | None
) -> AsyncIterator[Engine]:
    server_id = await asyncio.to_thread(server_id_of, config.state_dir)
    async with contextlib.AsyncExitStack() as stack:
        if store is None:
            from holm.events import open_store

            store = open_store(config)
            stack.push_async_callback(store.close)
        if runtimes is None:
            from holm.adapters.registry import make_runtimes

            runtimes = make_runtimes(config, server_id)
            for runtime in runtimes.values():
                stack.push_async_callback(runtime.close)
        from holm.adapters.registry import remote_runtimes

        engine = Engine(
            config,
            store,
            runtimes,
            server_id=server_id,
            make_runtime=remote_runtimes(config, server_id),
        )
        await engine.start()
        stack.push_async_callback(engine.close)
        log.info(
            "holmd %s: %d box(es), runtimes %s",
            server_id,
            len(engine.boxes()),
            ", ".join(sorted(runtimes)),
        )
        yield engine


__all__ = ["create_app", "declared_routes"]
