"""Fixtures of the replay tests: hand-made traces, and engines over real local boxes."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from replay_kit import Desktops, TraceBuilder


@pytest.fixture
def trace() -> TraceBuilder:
    return TraceBuilder()


@pytest.fixture
def state_dir() -> Iterator[Path]:
    # Short: the boxes' Unix sockets live below it.
    path = Path(tempfile.mkdtemp(prefix="h6-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def desktops(state_dir: Path) -> AsyncIterator[Desktops]:
    """Engines over one local runtime; every box they made is removed when the test ends."""
    made = Desktops(state_dir)
    yield made
    await made.close()
