"""Fixtures of the projection tests."""

from __future__ import annotations

import pytest
from projection_kit import TraceBuilder


@pytest.fixture
def trace() -> TraceBuilder:
    return TraceBuilder()
