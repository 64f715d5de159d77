"""Fixtures of the docker runtime's tests: a Docker Engine (started by scripts/dockerd-up
when none answers, and stopped at the end only if these tests started it), one box image
built once per session and shared, a short state dir (Unix socket paths are short), and
runtimes whose boxes are all removed when a test ends."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import docker
import pytest
from runtime_kit import built_image

from holm.adapters.docker.runtime import DockerRuntime
from holm.wire.api import ImageInfo

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def engine(docker_client: docker.DockerClient) -> docker.DockerClient:
    return docker_client


@pytest.fixture(scope="session")
def server_id() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def boxes_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="h7-", dir="/tmp"))
    yield path / "boxes"
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def session_image(engine: docker.DockerClient, boxes_dir: Path, server_id: str) -> ImageInfo:
    """The default image, built (or found) once; the first build takes minutes."""
    return asyncio.run(built_image(engine, boxes_dir, server_id))


MakeRuntime = Callable[..., DockerRuntime]


@pytest.fixture
async def make_runtime(
    engine: docker.DockerClient, boxes_dir: Path, server_id: str, session_image: ImageInfo
) -> AsyncIterator[MakeRuntime]:
    """New runtime objects on the session's engine and state dir (as a restarted holmd
    would make); every box they made is removed at the end."""
    made: list[DockerRuntime] = []

    def make(**options: object) -> DockerRuntime:
        runtime = DockerRuntime(boxes_dir, server_id, client=docker.from_env(), **options)  # type: ignore[arg-type]
        made.append(runtime)
        return runtime

    yield make
    for box in await made[0].list() if made else []:
        if box.server_id == server_id:
            await made[0].delete(box.box_id)
    for runtime in made:
        await runtime.close()


@pytest.fixture
async def runtime(make_runtime: MakeRuntime) -> DockerRuntime:
    return make_runtime()


def new_box_id() -> str:
    return f"box_{uuid.uuid4().hex[:12]}"
