"""The workspace tests import their kit (workspaces_kit.py) from beside them, and the MCP
tests' kit (tests/mcp/mcp_kit.py) for a session of the SDK's client."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "mcp"))
