"""Fixtures of the HTTP tests: the real app on a test server, over the in-memory runtime
double (holm.adapters.memory.runtime) for what does not need a desktop, or over real local
boxes (test_local_boxes.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from http_kit import Client, MakeClient, app_config

from holm.adapters.memory.runtime import MemoryRuntime, MemoryWorld
from holm.config import server_id_of
from holm.events import LocalStore, MemoryStore
from holm.events.store import TraceStore


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Schemathesis names the test of each API operation `name[GET /v1/…]`, but under
    pytest 9 its items' ids leave the operation out (pytest builds an item's id from its
    parametrization, which schemathesis does not use): one id for every operation, which
    pytest's progress counted as one test (a whole run ended at 92 %, one line printed
    twice) and a report could not tell apart. Each gets its operation back (selecting one
    still goes by `-k`: the command line's ids are matched before this)."""
    for item in items:
        operation = getattr(item, "operation_label", None)
        if operation and item._id.params is None:
            item._id = item._id.with_params(operation)


@pytest.fixture
def world() -> MemoryWorld:
    return MemoryWorld()


@pytest.fixture
async def make_client(tmp_path: Path, world: MemoryWorld) -> AsyncIterator[MakeClient]:
    """Start the app (closed at the end) with settings; `store="local"` keeps traces in
    the test's state dir, so a second client started after closing the first one is a
    restarted server. Runtimes share one world of boxes."""
    clients: list[Client] = []

    async def make(
        *,
        store: str | TraceStore = "memory",
        runtime: MemoryRuntime | None = None,
        **settings: Any,
    ) -> Client:
        from holm.http.app import create_app

        config = app_config(tmp_path, **settings)
        server_id = server_id_of(tmp_path)
        trace_store: TraceStore = (
            store
            if not isinstance(store, str)
            else LocalStore(tmp_path / "state")
            if store == "local"
            else MemoryStore()
        )
        runtime = runtime or MemoryRuntime(server_id=server_id, world=world)
        app = create_app(config, runtimes={runtime.name: runtime}, store=trace_store)
        app.on_cleanup.append(lambda _: trace_store.close())
        client: Client = TestClient(TestServer(app))
        await client.start_server()
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


@pytest.fixture
async def client(make_client: MakeClient) -> Client:
    return await make_client()
