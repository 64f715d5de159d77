"""The MCP tests import their kit (mcp_kit.py) from beside them."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
