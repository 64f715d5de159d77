"""The OpenAPI document against the running server, with schemathesis: for generated
requests to every route, no answer is a 500 (502, 503 and 504 are the API's own errors for
a box out of reach, a missing store and a wait that ran out), each status and body is one
the document names, and every error has the error body.

Bounded: a few examples per route (`max_examples`), on the in-memory runtime double
(creating a real box per generated request would take hours), whose waits and `sleep` are
capped at 10 ms; generated `settle_ms` are capped the same way. Routes with a box id get
the id of a real box half of the time, so that they go past the 404.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from holm.adapters.memory.runtime import MemoryRuntime
from holm.config import load_config, server_id_of
from holm.events import MemoryStore
from holm.http.app import create_app, declared_routes
from holm.http.openapi import openapi_document
from holm.http.unreadable import Runner

schema = schemathesis.openapi.from_dict(openapi_document(declared_routes()))

ERROR_KEYS = {"code", "message", "retryable"}
MAX_EXAMPLES = 6


class Server:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.url = ""
        self.box_id = ""
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._start())
        self.ready.set()
        self.loop.run_forever()

    async def _start(self) -> None:
        from aiohttp import ClientSession, web

        self.state = state = Path(tempfile.mkdtemp(prefix="h5a-st-"))
        config = load_config(
            {},
            state_dir=str(state),
            default_runtime="memory",
            schedule="external",
            # The generated requests carry no token; the server listens on loopback.
            server_auth="none",
            fork_wait_cap_ms=1,
            fork_limit_secs=2,
        )
        runtime = MemoryRuntime(server_id=server_id_of(state), max_sleep_secs=0.01)
        # holmd's runner, which answers a request aiohttp cannot read with the error body.
        self.runner = Runner(create_app(config, runtimes={"memory": runtime}, store=MemoryStore()))
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        host, port = self.runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        async with (
            ClientSession() as session,
            session.post(f"{self.url}/v1/boxes", json={}) as response,
        ):
            self.box_id = (await response.json())["id"]

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        shutil.rmtree(self.state, ignore_errors=True)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    running = Server()
    running.thread.start()
    assert running.ready.wait(timeout=30)
    yield running
    running.stop()


def _aim(case: Any, server: Server) -> None:
    parameters = case.path_parameters or {}
    deleting_the_box = case.method == "DELETE" and case.path == "/v1/boxes/{id}"
    if "id" in parameters and not deleting_the_box and hash(str(case.body)) % 2 == 0:
        parameters["id"] = server.box_id
    if isinstance(case.body, dict) and isinstance(case.body.get("settle_ms"), int):
        case.body["settle_ms"] = min(case.body["settle_ms"], 10)
    fields = case.body.get("fields") if isinstance(case.body, dict) else None
    if isinstance(fields, dict) and "url" in fields:
        # A runtime added is listed once: a URL it names stays on loopback (port 9, where
        # nothing listens), never a host a generated string names.
        fields["url"] = "http://127.0.0.1:9"


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_server_error_and_every_answer_as_documented(case: Any, server: Server) -> None:
    _aim(case, server)
    response = case.call(base_url=server.url, timeout=60)
    assert response.status_code != 500, response.text
    case.validate_response(
        response,
        checks=[
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
        ],
    )
    if response.status_code >= 400:
        assert set(response.json()) == ERROR_KEYS
