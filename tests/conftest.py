"""What every part of the suite may share: one Docker Engine for the whole run, started by
scripts/dockerd-up when none answers (and stopped at the end only if this run started it),
one second engine standing for one on another host (kits/remote_dockerd.py: the box image
is sent to it once a process), and one PostgreSQL and one SeaweedFS (store_kit), each
started by the first test that asks for it; none is started for a run that needs none; the
time bound of the tests that use the Docker Engine; and the sharing of one run by several
pytest processes (kits.workers)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import docker
import pytest
from hypothesis import settings
from kits.remote_dockerd import RemoteEngine, remote_engine
from kits.workers import pytest_runtestloop
from runtime_kit import docker_engine
from store_kit import own_pg, pg_server, s3_server

# No deadline per example: a property holds or not whatever the machine's load, and a timed
# assertion is a bench's job (on a loaded 2-core host one fold took 372 ms, past the 200 ms
# default, and failed a run that was right).
settings.register_profile("holm", deadline=None)
settings.load_profile("holm")

# The bound of a test that needs a Docker Engine: the first of them starts the engine and
# builds the box image, which takes minutes on a fresh host (every other test: pyproject's).
DOCKER_TIMEOUT_S = 1800


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        uses_docker = item.get_closest_marker("docker") is not None or "docker_client" in getattr(
            item, "fixturenames", ()
        )
        if uses_docker and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(DOCKER_TIMEOUT_S))


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    with docker_engine() as client:
        yield client


@pytest.fixture(scope="session")
def remote_docker_engine() -> Iterator[RemoteEngine]:
    with remote_engine() as engine:
        yield engine


__all__ = [
    "docker_client",
    "own_pg",
    "pg_server",
    "pytest_runtestloop",
    "remote_docker_engine",
    "s3_server",
]


@pytest.fixture(scope="session", autouse=True)
def vncdotool_reactor() -> Iterator[None]:
    """vncdotool runs one twisted reactor a process, which cannot start again once it is
    stopped: the modules that use it (the viewer's, the VNC door's, Wayland's) share it,
    and it is stopped once, after them all."""
    yield
    api = sys.modules.get("vncdotool.api")
    if api is not None:
        api.shutdown()
