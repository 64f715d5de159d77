"""Fixtures of the viewer tests: the HTTP kits (the app over the memory double, and over
real local boxes) are tests/http's, shared rather than copied."""

from __future__ import annotations

import importlib.util
from pathlib import Path

HTTP_TESTS = Path(__file__).parent.parent / "http"

_spec = importlib.util.spec_from_file_location("http_fixtures", HTTP_TESTS / "conftest.py")
assert _spec is not None and _spec.loader is not None
_http = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_http)

world = _http.world
make_client = _http.make_client
