"""What the HTTP tests share: starting holmd's app (the real `create_app`) on a test server
over a given runtime and store, and reading answers."""

from __future__ import annotations

import asyncio
import base64
import io
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient
from PIL import Image, ImageChops

from holm.config import Config, load_config
from holm.engine import Engine
from holm.http.routing import ENGINE

Client = TestClient[Any, Any]
MakeClient = Callable[..., Awaitable[Client]]

ERROR_KEYS = {"code", "message", "retryable"}


def app_config(state_dir: Path, **settings: object) -> Config:
    """The settings of a test server. Auth is off unless a test gives a token or asks for
    auth (`server_auth="token"`, which generates one in the state dir), so that the tests
    of everything else send none; the test server listens on loopback, where that is
    allowed."""
    base: dict[str, object] = {
        "state_dir": str(state_dir),
        "default_runtime": "memory",
        "schedule": "external",
    }
    if "server_token" not in settings:
        base["server_auth"] = "none"
    return load_config({}, **{**base, **settings})


async def error_of(response: ClientResponse, status: int, code: str) -> str:
    """Check an error answer: its status, and a body that is exactly the error body with
    `code`; return its message."""
    body = await response.json()
    assert (response.status, body.get("code")) == (status, code), body
    assert set(body) == ERROR_KEYS, body
    assert isinstance(body["message"], str) and body["message"]
    assert isinstance(body["retryable"], bool)
    return str(body["message"])


async def ok_json(response: ClientResponse, status: int = 200) -> Any:
    body = await response.json()
    assert response.status == status, body
    return body


def kinds(entries: Sequence[dict[str, Any]]) -> list[str]:
    return [entry["kind"] for entry in entries]


def engine_of(client: Client) -> Engine:
    """The engine behind a test server, for a test to set up what no route can yet (a
    person taking a screen over)."""
    return client.app[ENGINE]


async def new_box(client: Client, body: dict[str, Any] | None = None) -> str:
    created = await ok_json(await client.post("/v1/boxes", json=body or {}))
    return str(created["id"])


async def trace_entries(client: Client, box_id: str) -> list[dict[str, Any]]:
    """The whole trace, read a page at a time as a client would."""
    entries: list[dict[str, Any]] = []
    after = -1
    while True:
        page = await ok_json(await client.get(f"/v1/boxes/{box_id}/trace?after={after}"))
        entries += page["entries"]
        if not page["more"]:
            return entries
        after = page["next"]


async def shot(client: Client, box: str, bounds: dict[str, int]) -> Image.Image:
    """Screen 0's pixels inside `bounds`."""
    frame = await ok_json(await client.get(f"/v1/boxes/{box}/screens/0/frame", params=bounds))
    return Image.open(io.BytesIO(base64.b64decode(frame["png_base64"]))).convert("RGB")


async def shot_once_changed(
    client: Client, box: str, bounds: dict[str, int], before: Image.Image
) -> Image.Image:
    """The pixels inside `bounds` once they differ from `before` (a program draws on its own
    time: a bounded wait for a state, not a timing), or as they are when the wait ends."""
    for _ in range(50):
        after = await shot(client, box, bounds)
        if ImageChops.difference(before, after).getbbox() is not None:
            break
        await asyncio.sleep(0.1)
    return after
