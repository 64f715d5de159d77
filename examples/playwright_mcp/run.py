"""Playwright MCP (`@playwright/mcp`) on a holm box: its browser tools drive the box's
Chromium, through the box's DevTools relay, so it downloads no browser of its own.

    cd examples/playwright_mcp && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci
    export HOLM_SERVER_URL=http://127.0.0.1:8080  HOLM_SERVER_TOKEN=…
    python examples/playwright_mcp/run.py --replay examples/fixtures/playwright_mcp_calls.json

An MCP client (Claude Code, Cursor) starts it the same way, with the address that
`POST /v1/boxes/{id}/cdp` (`holm cdp BOX`) answers:

    claude mcp add playwright -- npx @playwright/mcp --cdp-endpoint "$CDP_URL"

`run` starts it over stdio with the `mcp` SDK's client and makes a model's tool calls
(`--replay`: those of a recorded conversation, the `tool_use` blocks a model sent to
Playwright MCP's tools), answering each one's text.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from holm import Box

HERE = Path(__file__).resolve().parent
SERVER = HERE / "node_modules" / ".bin" / "playwright-mcp"


async def run(cdp_url: str, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Make `calls` (`{"name", "input"}`, as a model's `tool_use` blocks) to Playwright
    MCP on the browser at `cdp_url`; each one's answer (`is_error` and its text)."""
    answers = []
    # Where it writes what it saves (snapshots, screenshots), not the working directory.
    with tempfile.TemporaryDirectory(prefix="playwright-mcp-") as saved:
        server = StdioServerParameters(
            command=str(SERVER),
            args=["--cdp-endpoint", cdp_url, "--output-dir", saved],
            env={**os.environ, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"},
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for call in calls:
                result = await session.call_tool(call["name"], call.get("input", {}))
                text = "\n".join(getattr(block, "text", "") for block in result.content)
                answers.append(
                    {"name": call["name"], "is_error": bool(result.is_error), "text": text}
                )
    return answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replay", type=Path, required=True, help="the tool calls to make")
    parser.add_argument("url", nargs="?", default="https://example.com")
    args = parser.parse_args()
    calls = json.loads(args.replay.read_text())["calls"]
    with Box.create() as box:
        box.open(args.url)
        address = box.client.devtools(box.id, ttl_secs=600)
        for answer in asyncio.run(run(address.url, calls)):
            print(f"{answer['name']}: {answer['text'][:200]}")


if __name__ == "__main__":
    main()
