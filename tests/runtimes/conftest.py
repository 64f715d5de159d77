"""The vendor API's tests import their kit (vendor_kit.py) from beside them, and the HTTP
tests' (http_kit.py)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "http"))
