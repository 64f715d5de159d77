"""Workspaces over MCP, with the SDK's own client on a real holmd: a key's session lists and
launches its own boxes only, every tool that names a box answers another workspace's box as
an absent one, and a wrong, missing or removed key gets 401 on `/mcp`."""

from __future__ import annotations

from pathlib import Path

import httpx2
import mcp_types as types
from mcp_kit import ACCEPT, EXAMPLES, INIT, call, json_of, mcp_session
from workspaces_kit import TOKEN, bearer, ids, served_app, two_workspaces, workspace_with_a_box

from holm.adapters.memory.runtime import MemoryWorld
from holm.http.mcp.tools import TOOLS, OnBox

ABSENT = "box_" + "0" * 32


def text_of(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent), first
    return first.text


async def test_a_keys_session_sees_only_its_boxes(tmp_path: Path) -> None:
    async with two_workspaces(tmp_path) as (server, a, b):
        async with mcp_session(server.url, a.key) as session:
            assert ids(json_of(await call(session, "list_boxes"))) == {a.box}
            launched = json_of(await call(session, "launch_box"))
            assert launched["owner"] == a.id
            forked = json_of(await call(session, "fork_box", box=a.box))
            assert forked["box"]["owner"] == a.id
            mine = {a.box, launched["id"], forked["box"]["id"]}
            assert ids(json_of(await call(session, "list_boxes"))) == mine
            await call(session, "run_command", box=a.box, argv=["true"])

            # Every tool that names a box: b's box answers as a box that never was.
            box_tools = [tool for tool in TOOLS if issubclass(tool.where, OnBox)]
            assert {"trace", "fork_box", "remove_box", "run_command"} <= {
                tool.name for tool in box_tools
            }
            for tool in box_tools:
                # With the tool's example arguments (tests/mcp), so that they pass its schema.
                example = EXAMPLES[tool.name]
                theirs = await session.call_tool(tool.name, {**example, "box": b.box})
                absent = await session.call_tool(tool.name, {**example, "box": ABSENT})
                assert theirs.is_error and absent.is_error, tool.name
                assert text_of(theirs) == f"not_found: no box {b.box}", tool.name
                assert text_of(absent) == f"not_found: no box {ABSENT}", tool.name
        # b's box was not touched, and b sees none of a's.
        assert (await server.ok("GET", f"/v1/boxes/{b.box}", b.key))["state"] == "ready"
        assert ids(await server.ok("GET", "/v1/boxes", b.key)) == {b.box}
        # The server token's session sees every box.
        async with mcp_session(server.url, TOKEN) as session:
            assert ids(json_of(await call(session, "list_boxes"))) == mine | {b.box}


async def test_a_wrong_missing_or_removed_key_gets_401_on_mcp(tmp_path: Path) -> None:
    async with served_app(tmp_path, MemoryWorld()) as server:
        a = await workspace_with_a_box(server, "alpha")
        async with httpx2.AsyncClient() as http:

            async def status_of(headers: dict[str, str]) -> int:
                answer = await http.post(
                    f"{server.url}/mcp", headers={**ACCEPT, **headers}, json=INIT
                )
                return answer.status_code

            assert await status_of(bearer(a.key)) == 200
            for headers in ({}, bearer("wrong"), bearer(a.key + "x"), {"Authorization": a.key}):
                assert await status_of(headers) == 401, headers
            await server.ok("DELETE", f"/v1/keys/{a.key_id}")
            assert await status_of(bearer(a.key)) == 401
