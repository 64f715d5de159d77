"""Fixtures of the projection tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from projection_kit import TraceBuilder


@pytest.fixture
def trace() -> TraceBuilder:
    return TraceBuilder()
