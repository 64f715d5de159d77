"""The MCP tests import their kit (mcp_kit.py) from beside them."""

from __future__ import annotations
