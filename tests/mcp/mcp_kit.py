"""What the MCP tests share: holmd's real app on a test server (over the in-memory runtime
unless a test gives another), and a session of the `mcp` SDK's own client on its `/mcp`."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import mcp_types as types
from aiohttp.test_utils import TestClient, TestServer
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from holm.adapters.base import Runtime
from holm.adapters.memory.runtime import MemoryRuntime
from holm.config import load_config, server_id_of
from holm.events import MemoryStore

TOKEN = "mcp-test-token"
# A client's first message, for tests that speak to `/mcp` without the SDK.
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@contextlib.asynccontextmanager
async def holmd(
    state_dir: Path, runtime: Runtime | None = None, **settings: Any
) -> AsyncIterator[str]:
    """Serve holmd's app on 127.0.0.1 (a free port) with a bearer token (and `settings` of
    its config); yield its URL."""
    from holm.http.app import create_app

    config = load_config(
        {},
        state_dir=str(state_dir),
        default_runtime=runtime.name if runtime else "memory",
        schedule="external",
        server_token=TOKEN,
        **settings,
    )
    runtime = runtime or MemoryRuntime(server_id=server_id_of(state_dir))
    store = MemoryStore()
    app = create_app(config, runtimes={runtime.name: runtime}, store=store)
    client: TestClient[Any, Any] = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    try:
        yield str(client.make_url("/")).rstrip("/")
    finally:
        await client.close()
        await store.close()


@contextlib.asynccontextmanager
async def mcp_session(base_url: str, token: str = TOKEN) -> AsyncIterator[ClientSession]:
    """An initialized MCP session on `base_url`/mcp, through the SDK's Streamable HTTP client."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
        streamable_http_client(f"{base_url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, name: str, **arguments: Any) -> types.CallToolResult:
    """Call a tool that must succeed."""
    result = await session.call_tool(name, arguments)
    assert not result.is_error, (name, result.content)
    return result


def json_of(result: types.CallToolResult) -> Any:
    """The JSON of a tool's first (text) block."""
    first = result.content[0]
    assert isinstance(first, types.TextContent), first
    return json.loads(first.text)


FORM = "data:text/html," + quote(
    '<title>Form</title><h1>Sign up</h1><input placeholder="Name">'
    '<select aria-label="Colour"><option>Red</option><option>Green</option></select>'
    "<button>Continue</button>"
)

# One call of each tool, as a model would make it (`box` is filled in).
EXAMPLES: dict[str, dict[str, Any]] = {
    "launch_box": {"spec": {"desktop": {"width": 1024, "height": 768}}},
    "list_boxes": {},
    "box_status": {},
    "open_url": {"url": FORM, "label": "form"},
    "click": {"at": {"x": 10, "y": 20}, "held": ["ctrl"]},
    "double_click": {"at": {"x": 11, "y": 21}},
    "type_text": {"text": "hello"},
    "press_key": {"chord": "ctrl+l", "then": ["enter"]},
    "drag": {"from": {"x": 1, "y": 1}, "to": {"x": 50, "y": 60}},
    "scroll": {"at": {"x": 5, "y": 5}, "dy": 3},
    "move": {"to": {"x": 7, "y": 8}},
    "wait_until_still": {"settle_ms": 0, "within_ms": 100},
    "open_app": {"app": "xterm"},
    "run_command": {"argv": ["echo", "hi"]},
    "write_file": {"path": "/tmp/a.txt", "contents_base64": "aGkK"},
    "read_file": {"path": "/tmp/a.txt"},
    "list_files": {"path": "/tmp"},
    "grep": {"pattern": "hi", "path": "/tmp"},
    "clipboard": {"text": "copied"},
    "screenshot": {"scale": 50, "format": "jpeg", "quality": 60},
    "windows": {"active": True},
    "batch": {
        "actions": [
            {"type": "click", "at": {"x": 3, "y": 4}},
            {"type": "key_down", "key": "shift"},
            {"type": "key_up", "key": "shift"},
            {"type": "on_page", "what": {"op": "fill", "query": "Name", "text": "Ada"}},
        ],
        "want": ["frame"],
    },
    "click_element": {"query": "Continue"},
    "fill_field": {"query": "Name", "text": "Ada"},
    "dropdown": {"query": "Colour", "options": ["Green"]},
    "read_page": {"format": "text"},
    "find": {"query": "Sign up"},
    "snapshot": {"delta": True},
    "evaluate": {"expression": "document.title"},
    "trace": {"after": 1},
    "fork_box": {},
    "remove_box": {},
}
