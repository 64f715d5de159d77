"""`/mcp`: MCP over Streamable HTTP, with the official SDK bridged into holmd's aiohttp app
(`bridge`), and the tools, each generated from a wire type (`tools`)."""

from __future__ import annotations

from .server import PATH, ROUTES, list_tools_result, setup_mcp

__all__ = ["PATH", "ROUTES", "list_tools_result", "setup_mcp"]
