"""What the workspace tests share: holmd's real app (`create_app`, the durable local store
in a state dir, the in-memory runtime) served on 127.0.0.1, which a test can stop and start
again on the same state dir; and two workspaces with a key and a box each."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
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
class Holmd:
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
async def holmd(state_dir: Path, world: MemoryWorld, **settings: object) -> AsyncIterator[Holmd]:
    """Serve holmd on a free port of 127.0.0.1 with the server token `TOKEN`, the local
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
            yield Holmd(str(server.make_url("")).rstrip("/"), http)
    finally:
        await server.close()


@dataclass(frozen=True)
class Workspace:
    id: str
    name: str
    key: str
    key_id: str
    box: str


async def workspace_with_a_box(server: Holmd, name: str) -> Workspace:
    """A workspace made with the server token, a key of it, and a box launched with it."""
    made = await server.ok("POST", "/v1/workspaces", json={"name": name})
    key = await server.ok("POST", "/v1/keys", json={"workspace": name})
    box = await server.ok("POST", "/v1/boxes", key["key"], json={})
    return Workspace(made["id"], name, key["key"], key["id"], box["id"])


def ids(listed: Mapping[str, Any]) -> set[str]:
    return {box["id"] for box in listed["boxes"]}


@contextlib.asynccontextmanager
async def two_workspaces(state_dir: Path) -> AsyncIterator[tuple[Holmd, Workspace, Workspace]]:
    """holmd with the workspaces `alpha` and `beta`, each with a key and a box."""
    async with holmd(state_dir, MemoryWorld()) as server:
        alpha = await workspace_with_a_box(server, "alpha")
        yield server, alpha, await workspace_with_a_box(server, "beta")
