"""Fixtures of the client's tests against a real holmd (see tests/cli/e2e_kit.py)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

import e2e_kit
from e2e_kit import Holmd

from holm.client import HolmClient

# The fixtures both suites share: pytest finds them as names of this module.
holmd = e2e_kit.holmd
box = e2e_kit.box


@pytest.fixture
async def client(holmd: Holmd) -> AsyncIterator[HolmClient]:
    async with HolmClient(holmd.url, holmd.token) as client:
        yield client
