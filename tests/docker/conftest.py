"""Fixtures of the docker runtime's tests: a Docker Engine (started by scripts/dockerd-up
when none answers, and stopped at the end only if these tests started it), one box image
built once per session and shared, a short state dir (Unix socket paths are short), and
runtimes whose boxes are all removed when a test ends."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import docker
import pytest

from holm.adapters.docker.runtime import DockerRuntime
from holm.wire.api import ImageInfo
from holm.wire.spec import Spec

REPO = Path(__file__).resolve().parents[2]
# One image for the session's boxes: the default spec, the one most boxes use.
SESSION_SPEC = Spec()


@pytest.fixture(scope="session")
def engine() -> Iterator[docker.DockerClient]:
    up = subprocess.run(
        [str(REPO / "scripts/dockerd-up")], capture_output=True, text=True, timeout=120
    )
    assert up.returncode == 0, f"no Docker Engine: {up.stderr}"
    client = docker.from_env(timeout=600)
    yield client
    client.close()
    if up.stdout.strip() == "started":
        subprocess.run([str(REPO / "scripts/dockerd-down")], check=True, timeout=120)


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
    runtime = DockerRuntime(boxes_dir, server_id, client=engine)
    lines: list[str] = []
    info = asyncio.run(runtime.build_image(SESSION_SPEC, lines.append))
    assert info.state is None and info.image, lines[-20:]
    return info


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
