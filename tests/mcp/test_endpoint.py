"""`/mcp` speaks MCP over Streamable HTTP with the SDK's own client: initialize, the tool list
(every tool, each schema a valid JSON schema), and one tool end to end."""

from __future__ import annotations

from pathlib import Path

from jsonschema.validators import validator_for
from mcp_kit import call, holmd, json_of, mcp_session

TOOLS = {
    "launch_box", "list_boxes", "box_status", "remove_box", "open_url", "click",
    "double_click", "type_text", "press_key", "drag", "scroll", "move", "wait_until_still",
    "open_app", "run_command", "read_file", "write_file", "list_files", "grep", "clipboard",
    "screenshot", "windows", "batch", "fork_box", "trace", "click_element", "fill_field",
    "dropdown", "read_page", "find", "snapshot", "evaluate",
}  # fmt: skip


async def test_initialize_list_tools_and_launch(tmp_path: Path) -> None:
    async with holmd(tmp_path) as url, mcp_session(url) as session:
        listed = await session.list_tools()
        assert {tool.name for tool in listed.tools} == TOOLS
        for tool in listed.tools:
            schema = tool.input_schema
            validator_for(schema).check_schema(schema)
            assert schema["type"] == "object", tool.name
            assert tool.description, tool.name
        hints = {tool.name: tool.annotations for tool in listed.tools}
        assert hints["screenshot"] and hints["screenshot"].read_only_hint is True
        assert hints["remove_box"] and hints["remove_box"].destructive_hint is True
        # MCP's defaults are "not read-only" and "destructive": a hint is there when it says
        # otherwise.
        assert hints["click"] and hints["click"].read_only_hint is None
        assert hints["click"].destructive_hint is False
        box = json_of(await call(session, "launch_box"))
        assert box["state"] == "ready"
        listed_boxes = json_of(await call(session, "list_boxes"))
        assert [b["id"] for b in listed_boxes["boxes"]] == [box["id"]]
