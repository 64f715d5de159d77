"""What every part of the suite may share: one Docker Engine for the whole run, started by
scripts/dockerd-up when none answers (and stopped at the end only if this run started it),
asked for only by the tests that need it."""

from __future__ import annotations

from collections.abc import Iterator

import docker
import pytest
from runtime_kit import docker_engine


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    with docker_engine() as client:
        yield client
