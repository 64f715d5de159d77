"""holmd's real app (`create_app`, the durable local store in a state dir, the in-memory
runtime over a world of boxes that outlives it) served in this process on 127.0.0.1, which
a test can stop and start again on the same state dir; with an HTTP session to call it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer

from holm.adapters.memory.runtime import MemoryRuntime, MemoryWorld
from holm.config import load_config, server_id_of

TOKEN = "the-server-token"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class ServedApp:
    url: str
    http: aiohttp.ClientSession

    async def call(
        self, method: str, path: str, token: str | None, json: Any = None
    ) -> tuple[int, Any]:
        """One request with `token` (None: no Authorization); the status and JSON body."""
        headers = bearer(token) if token is not None else {}
        async with self.http.request(
            method, self.url + path, headers=headers, json=json
        ) as response:
            is_json = response.content_type == "application/json"
            return response.status, await response.json() if is_json else await response.read()

    async def ok(self, method: str, path: str, token: str | None = TOKEN, json: Any = None) -> Any:
        status, body = await self.call(method, path, token, json)
        assert status == 200, (method, path, status, body)
        return body


@contextlib.asynccontextmanager
async def served_app(
    state_dir: Path, world: MemoryWorld, **settings: object
) -> AsyncIterator[ServedApp]:
    """Serve the app on a free port of 127.0.0.1 with the server token `TOKEN`, the local
    store in `state_dir` and the in-memory runtime over `world` (boxes outlive a restart,
    as a real runtime's do). Events show at once (no delay). `settings` replace these."""
    from holm.http.app import create_app

    base: dict[str, object] = {
        "state_dir": str(state_dir),
        "storage_backend": "local",
        "default_runtime": "memory",
        "schedule": "external",
        "server_token": TOKEN,
        "events_delay_ms": 0,
    }
    config = load_config({}, **{**base, **settings})
    runtime = MemoryRuntime(server_id=server_id_of(state_dir), world=world)
    server = TestServer(create_app(config, runtimes={"memory": runtime}), host="127.0.0.1")
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as http:
            yield ServedApp(str(server.make_url("")).rstrip("/"), http)
    finally:
        await server.close()
