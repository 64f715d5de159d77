"""The workspace tests import their kit (workspaces_kit.py) from beside them, and the MCP
tests' kit (tests/mcp/mcp_kit.py) for a session of the SDK's client."""

from __future__ import annotations
