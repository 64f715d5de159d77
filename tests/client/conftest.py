"""Fixtures of the client's tests against a real holmd (see tests/cli/e2e_kit.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import e2e_kit
import pytest
from e2e_kit import Holmd

from holm.client import HolmClient

# The fixtures both suites share: pytest finds them as names of this module.
holmd = e2e_kit.holmd
box = e2e_kit.box


@pytest.fixture
async def client(holmd: Holmd) -> AsyncIterator[HolmClient]:
    async with HolmClient(holmd.url, holmd.token) as client:
        yield client
