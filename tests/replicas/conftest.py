"""What the replicas' tests share as fixtures: a client with the holmd's token."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from kits.holmd import TOKEN


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """A client session that sends the token every holmd of the tests takes."""
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}) as session:
        yield session
