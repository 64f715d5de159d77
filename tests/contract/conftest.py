"""One box per runtime for the contract suite: the in-memory double, a local box (real Xvfb
and Chromium under bubblewrap) and a docker box, each shared by the tests of a module, so
that every test runs the same actions on all three."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from runtime_kit import Box, runtime_named

from holm.wire.spec import Placement, Spec


@pytest.fixture(scope="session")
def state_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="hc-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest_asyncio.fixture(
    scope="module",
    loop_scope="module",
    params=[
        "memory",
        "holm",
        pytest.param("local", marks=pytest.mark.desktop),
        pytest.param("docker", marks=[pytest.mark.desktop, pytest.mark.docker]),
    ],
)
async def box(request: pytest.FixtureRequest, state_dir: Path) -> AsyncIterator[Box]:
    """A fresh box of the runtime named by the parameter, removed at the end."""
    name: str = request.param
    server_id = f"contract-{uuid.uuid4().hex[:8]}"
    box_id = f"box_{uuid.uuid4().hex[:12]}"
    client = request.getfixturevalue("docker_client") if name == "docker" else None
    async with runtime_named(name, state_dir, server_id, client) as runtime:
        await runtime.create(box_id, Spec(), Placement())
        try:
            yield Box(name, box_id, await runtime.desktop(box_id))
        finally:
            await runtime.delete(box_id)
            await runtime.close()
