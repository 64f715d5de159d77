"""The vendor API's tests import their kit (vendor_kit.py) from beside them, and the HTTP
tests' (http_kit.py)."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
