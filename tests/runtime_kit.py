"""What tests of several runtimes share: a runtime by name (the in-memory double, local,
docker, and `holm`: another holmd over the double, in this process), the Docker Engine
(started by scripts/dockerd-up when none answers, and stopped at the end only if these
tests started it) and the default spec's box image (the first build takes minutes)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import docker
from aiohttp import web
from kits.remote_dockerd import RemoteEngine

from holm.adapters.base import Desktop, Runtime
from holm.adapters.docker.remote import docker_remote_runtime
from holm.adapters.docker.runtime import DockerRuntime
from holm.adapters.holmd.runtime import holm_runtime
from holm.adapters.local.runtime import LocalRuntime
from holm.adapters.memory.runtime import MemoryRuntime, MemoryWorld
from holm.config import load_config
from holm.wire.api import ImageInfo
from holm.wire.runtime import RuntimeSetup
from holm.wire.spec import Spec

REPO = Path(__file__).resolve().parents[1]
# One image for the session's boxes: the default spec, the one most boxes use.
SESSION_SPEC = Spec()


def _engine_users() -> Path:
    """The lock every user of the engine holds shared while it uses it (scripts/pytest-workers
    too): the one that started the engine stops it only when it alone holds it."""
    return Path(os.environ.get("HOLM_DOCKERD_PIDFILE", "/run/holm-dockerd.pid") + ".users")


@contextlib.contextmanager
def docker_engine() -> Iterator[docker.DockerClient]:
    with _engine_users().open("a") as users:
        fcntl.flock(users, fcntl.LOCK_SH)
        up = subprocess.run(
            [str(REPO / "scripts/dockerd-up")], capture_output=True, text=True, timeout=120
        )
        assert up.returncode == 0, f"no Docker Engine: {up.stderr}"
        client = docker.from_env(timeout=600)
        try:
            yield client
        finally:
            client.close()
            if up.stdout.strip() == "started" and _alone(users):
                subprocess.run([str(REPO / "scripts/dockerd-down")], check=True, timeout=120)


def _alone(users: IO[str]) -> bool:
    """Whether no other process uses the engine now; if one does, the engine is left running
    for it (stopping it would pull it from under that one's tests)."""
    try:
        fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


# One build of the session image at a time on this host: the processes that share a run
# (kits.workers) would otherwise each build it at once, twice the minutes on two cores; the
# one that waited finds the other's by its tag.
BUILD_LOCK = Path("/run/lock" if Path("/run/lock").is_dir() else "/tmp") / "holm-test-build.lock"


@contextlib.asynccontextmanager
async def _build_lock() -> AsyncIterator[None]:
    with BUILD_LOCK.open("a") as held:
        await asyncio.to_thread(fcntl.flock, held, fcntl.LOCK_EX)
        yield


async def built_image(client: docker.DockerClient, boxes_dir: Path, server_id: str) -> ImageInfo:
    """The default image, built (or found by its tag)."""
    runtime = DockerRuntime(boxes_dir, server_id, client=client)
    lines: list[str] = []
    async with _build_lock():
        info = await runtime.build_image(SESSION_SPEC, lines.append)
    assert info.state is None and info.image, lines[-20:]
    return info


# The X displays the local boxes of these tests may use (the machine is shared).
DISPLAY_BASE = 300
DISPLAY_COUNT = 10


TOKEN = "contract-back-token"


@contextlib.asynccontextmanager
async def holmd_of_memory(state_dir: Path) -> AsyncIterator[str]:
    """Another holmd over the in-memory double, listening on loopback; its URL."""
    from holm.http.app import create_app

    config = load_config(
        {},
        state_dir=str(state_dir),
        default_runtime="memory",
        schedule="external",
        server_token=TOKEN,
    )
    runtime = MemoryRuntime(server_id="back")
    runner = web.AppRunner(create_app(config, runtimes={runtime.name: runtime}))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        host, port = runner.addresses[0][:2]
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


@dataclass
class Box:
    runtime: str
    box_id: str
    desktop: Desktop


@contextlib.asynccontextmanager
async def runtime_named(
    name: str,
    state_dir: Path,
    server_id: str,
    docker_client: docker.DockerClient | None = None,
    remote: RemoteEngine | None = None,
) -> AsyncIterator[Runtime]:
    """`remote_docker` is provider `docker` on `remote` (kits/remote_dockerd.py), its image
    sent from `docker_client`'s engine."""
    match name:
        case "memory":
            yield MemoryRuntime(server_id=server_id)
        case "local":
            yield LocalRuntime(
                state_dir / "local",
                server_id,
                display_base=DISPLAY_BASE,
                display_count=DISPLAY_COUNT,
            )
        case "holm":
            async with holmd_of_memory(state_dir / f"back-{server_id}") as url:
                setup = RuntimeSetup(
                    name="far", provider="holm", fields={"url": url}, secrets={"api_key": TOKEN}
                )
                yield holm_runtime(setup, state_dir / f"far-{server_id}", server_id)
        case "docker":
            assert docker_client is not None, "a docker runtime needs the Docker Engine"
            await built_image(docker_client, state_dir / "docker", server_id)
            yield DockerRuntime(state_dir / "docker", server_id, client=docker_client)
        case "remote_docker":
            assert docker_client is not None and remote is not None, "two Docker Engines"
            await built_image(docker_client, state_dir / "docker", server_id)
            yield remote_docker(remote, state_dir, server_id)


def remote_docker(
    remote: RemoteEngine, state_dir: Path, server_id: str, *, chromium: bool = True
) -> Runtime:
    """Provider `docker` on `remote`, its image sent from this host's engine."""
    setup = RuntimeSetup(
        name="far",
        provider="docker",
        fields={"host": remote.host},
        secrets=remote.client.secrets(),
    )
    return docker_remote_runtime(
        setup,
        state_dir / f"far-{server_id}",
        server_id,
        local_engine=docker.from_env,
        chromium=chromium,
    )


@contextlib.asynccontextmanager
async def runtimes_named(
    name: str,
    state_dir: Path,
    server_id: str,
    docker_client: docker.DockerClient | None = None,
    remote: RemoteEngine | None = None,
    *,
    chromium: bool = True,
) -> AsyncIterator[Callable[[], Runtime]]:
    """Make runtime objects of one runtime over the same boxes, as a restarted holmd
    makes a new one (the memory double's share one world of boxes, the holm runtime's one
    holmd behind them); `chromium` false starts boxes without it, where a test needs no
    browser. At the end, every box of `server_id` still there is deleted and every object
    closed."""
    made: list[Runtime] = []
    world = MemoryWorld()
    async with contextlib.AsyncExitStack() as stack:
        back: str | None = None
        if name in ("docker", "remote_docker"):
            assert docker_client is not None, "a docker runtime needs the Docker Engine"
            await built_image(docker_client, state_dir / "docker", server_id)
        if name == "holm":
            back = await stack.enter_async_context(holmd_of_memory(state_dir / f"back-{server_id}"))

        def new() -> Runtime:
            runtime: Runtime
            match name:
                case "memory":
                    runtime = MemoryRuntime(server_id=server_id, world=world)
                case "local":
                    runtime = LocalRuntime(
                        state_dir / "local",
                        server_id,
                        display_base=DISPLAY_BASE,
                        display_count=DISPLAY_COUNT,
                        chromium=chromium,
                    )
                case "holm":
                    setup = RuntimeSetup(
                        name="far",
                        provider="holm",
                        fields={"url": back},
                        secrets={"api_key": TOKEN},
                    )
                    runtime = holm_runtime(setup, state_dir / f"far-{server_id}", server_id)
                case "docker":
                    runtime = DockerRuntime(
                        state_dir / "docker", server_id, client=docker_client, chromium=chromium
                    )
                case "remote_docker":
                    assert remote is not None, "a second Docker Engine"
                    runtime = remote_docker(remote, state_dir, server_id, chromium=chromium)
                case _:
                    raise ValueError(f"no runtime {name!r}")
            made.append(runtime)
            return runtime

        try:
            yield new
        finally:
            if made:
                for box in await made[-1].list():
                    if box.server_id == server_id:
                        await made[-1].delete(box.box_id)
            for runtime in made:
                await runtime.close()
