"""Two holmds in this process for the vendor API's tests: a back server whose boxes are the
in-memory double's (it serves their agent streams, agent_server.py), on a port of its own,
and a front server that adds it as a runtime of provider `holm`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from http_kit import Client, app_config

from holm.adapters.base import Runtime
from holm.adapters.memory.runtime import MemoryRuntime
from holm.config import server_id_of
from holm.events import LocalStore
from holm.http.app import create_app

BACK_TOKEN = "back-token-0123456789"


@dataclass
class Servers:
    front: Client
    back: Client
    back_url: str
    front_dir: Path


@contextlib.asynccontextmanager
async def serving(
    app: web.Application, host: str = "127.0.0.1", port: int | None = None
) -> AsyncIterator[Client]:
    server = TestServer(app, host=host, port=port)
    client: Client = TestClient(server)
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def holmd(state_dir: Path, runtime: Runtime, **settings: Any) -> AsyncIterator[Client]:
    """A holmd over `runtime`, its traces kept in `state_dir` (a second one on the same
    folder, after this one, is this server restarted)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    config = app_config(state_dir, **settings)
    store = LocalStore(state_dir / "traces")
    try:
        app = create_app(config, runtimes={runtime.name: runtime}, store=store)
        async with serving(app) as client:
            yield client
    finally:
        await store.close()


@contextlib.asynccontextmanager
async def back_server(state_dir: Path, **settings: Any) -> AsyncIterator[tuple[Client, str]]:
    """A holmd over the memory double, with a token."""
    state_dir.mkdir(parents=True, exist_ok=True)
    runtime = MemoryRuntime(server_id=server_id_of(state_dir))
    async with holmd(state_dir, runtime, server_token=BACK_TOKEN, **settings) as back:
        yield back, str(back.make_url("")).rstrip("/")


@contextlib.asynccontextmanager
async def front_server(state_dir: Path, **settings: Any) -> AsyncIterator[Client]:
    """A holmd whose own runtime is the memory double (default `memory`)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    runtime = MemoryRuntime(server_id=server_id_of(state_dir))
    async with holmd(state_dir, runtime, **settings) as front:
        yield front


def holm_vendor(name: str, url: str, token: str = BACK_TOKEN) -> dict[str, Any]:
    return {"name": name, "provider": "holm", "fields": {"url": url}, "secrets": {"api_key": token}}
