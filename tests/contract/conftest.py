"""One box per runtime for the contract suite: the in-memory double, a local box (real Xvfb
and Chromium under bubblewrap), a local Wayland box (headless sway, Chromium on Wayland),
a docker box and a docker Wayland box (its own image), and one of provider `docker` on a
second engine over TLS (kits/remote_dockerd.py), each shared by the tests of a module, so
that every test runs the same actions on all of them."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from runtime_kit import Box, runtime_named

from holm.adapters.features import WAYLAND_WITHOUT
from holm.wire.spec import DesktopSpec, Placement, Spec, default_features

# A Wayland box with every default feature it has (holm/adapters/features.py).
WAYLAND_SPEC = Spec(
    desktop=DesktopSpec(
        server="wayland",
        features=[f for f in default_features("wayland") if f not in WAYLAND_WITHOUT],
    )
)


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
        pytest.param("local-wayland", marks=pytest.mark.desktop),
        pytest.param("docker", marks=[pytest.mark.desktop, pytest.mark.docker]),
        pytest.param("docker-wayland", marks=[pytest.mark.desktop, pytest.mark.docker]),
        pytest.param("remote_docker", marks=[pytest.mark.desktop, pytest.mark.docker]),
    ],
)
async def box(request: pytest.FixtureRequest, state_dir: Path) -> AsyncIterator[Box]:
    """A fresh box of the runtime named by the parameter, removed at the end."""
    name: str = request.param
    wayland = name.endswith("-wayland")
    name = name.removesuffix("-wayland")
    server_id = f"contract-{uuid.uuid4().hex[:8]}"
    box_id = f"box_{uuid.uuid4().hex[:12]}"
    dockers = name in ("docker", "remote_docker")
    client = request.getfixturevalue("docker_client") if dockers else None
    remote = request.getfixturevalue("remote_docker_engine") if name == "remote_docker" else None
    async with runtime_named(name, state_dir, server_id, client, remote) as runtime:
        await runtime.create(box_id, WAYLAND_SPEC if wayland else Spec(), Placement())
        try:
            yield Box(name, box_id, await runtime.desktop(box_id))
        finally:
            await runtime.delete(box_id)
            await runtime.close()
