"""holmd's app over the real local runtime (bubblewrap boxes) and the durable local store,
on a test server: what the end-to-end tests of test_local_boxes.py share."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from http_kit import Client, app_config, ok_json

from holm.adapters.local.runtime import LocalRuntime
from holm.config import server_id_of
from holm.events import LocalStore
from holm.http.app import create_app

# The X displays these tests may use (the machine is shared with other test runs).
DISPLAY_BASE = 240
DISPLAY_COUNT = 20


class LocalServer:
    """One state dir; `start` makes a server on it (a restart when one ran before)."""

    def __init__(self, display_base: int = DISPLAY_BASE, **runtime: Any) -> None:
        self.display_base = display_base
        # More settings of the LocalRuntime (max_boxes, display_count, chromium).
        self.runtime_settings = {"display_count": DISPLAY_COUNT, **runtime}
        # Unix socket paths must be short: a folder right under /tmp.
        self.state_dir = Path(tempfile.mkdtemp(prefix="h5a-", dir="/tmp"))
        self.client: Client | None = None
        self.runtime: LocalRuntime | None = None

    async def start(self, **settings: Any) -> Client:
        config = app_config(
            self.state_dir, default_runtime="local", storage_backend="local", **settings
        )
        store = LocalStore(self.state_dir)
        self.runtime = LocalRuntime(
            self.state_dir / "boxes",
            server_id_of(self.state_dir),
            display_base=self.display_base,
            **self.runtime_settings,
        )
        app = create_app(config, runtimes={"local": self.runtime}, store=store)
        app.on_cleanup.append(lambda _: store.close())
        self.client = TestClient(TestServer(app))
        await self.client.start_server()
        return self.client

    async def stop(self) -> None:
        """Stop the server; its boxes keep running, as they would after holmd stops."""
        if self.client is not None:
            await self.client.close()
            self.client = None
        if self.runtime is not None:
            await self.runtime.close()

    async def remove_everything(self) -> None:
        await self.stop()
        cleaner = LocalRuntime(self.state_dir / "boxes", "cleaner", display_base=self.display_base)
        for box in await cleaner.list():
            await cleaner.delete(box.box_id)
        await cleaner.close()
        shutil.rmtree(self.state_dir, ignore_errors=True)


@contextlib.asynccontextmanager
async def started(display_base: int = DISPLAY_BASE, **settings: Any) -> AsyncIterator[LocalServer]:
    """A server on a fresh state dir, for a module's tests; everything it made is removed
    at the end."""
    running = LocalServer(display_base)
    try:
        await running.start(**settings)
        yield running
    finally:
        await running.remove_everything()


def client_of(server: LocalServer) -> Client:
    assert server.client is not None
    return server.client


async def new_box(server: LocalServer) -> str:
    """A box of the default spec: one screen of 1280×800 with Chromium."""
    created = await ok_json(await client_of(server).post("/v1/boxes", json={}))
    return str(created["id"])
