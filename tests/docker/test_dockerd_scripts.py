"""scripts/dockerd-up and dockerd-down: start an engine only when none answers, and stop
only the one they started. The second engine here is a real dockerd on its own socket and
folders, in its own network namespace (its bridge and rules must not touch the host's), so
the session's engine is never touched."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

pytestmark = pytest.mark.docker

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _run(script: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(SCRIPTS / script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="h7d-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_an_engine_that_answers_is_left_alone(engine: docker.DockerClient, folder: Path) -> None:
    env = {**os.environ, "HOLM_DOCKERD_PIDFILE": str(folder / "pid")}
    assert _run("dockerd-up", env) == "running"
    assert not (folder / "pid").exists()
    _run("dockerd-down", env)
    assert engine.ping()


def test_up_starts_an_engine_once_and_down_stops_only_that_one(
    engine: docker.DockerClient, folder: Path
) -> None:
    socket = folder / "docker.sock"
    env = {
        **os.environ,
        "DOCKER_HOST": f"unix://{socket}",
        "HOLM_DOCKERD_PIDFILE": str(folder / "pid"),
        "HOLM_DOCKERD_LOG": str(folder / "log"),
        "HOLM_DOCKERD": "unshare --net dockerd",
        "HOLM_DOCKERD_ARGS": (
            f"-H unix://{socket} --data-root {folder}/root --exec-root {folder}/exec"
            f" --pidfile {folder}/dockerd.pid --iptables=false"
        ),
    }
    try:
        assert _run("dockerd-up", env) == "started"
        pid = int((folder / "pid").read_text())
        assert Path(f"/proc/{pid}/comm").read_text().strip() == "dockerd"
        second = docker.DockerClient(base_url=f"unix://{socket}")
        assert second.info()["DockerRootDir"] == f"{folder}/root"
        second.close()
        assert _run("dockerd-up", env) == "running"
        assert int((folder / "pid").read_text()) == pid

        assert _run("dockerd-down", env) == "stopped"
        assert not Path(f"/proc/{pid}").exists()
        assert not (folder / "pid").exists()
        # The session's engine still answers, its bridge untouched.
        assert engine.ping()
        assert Path("/sys/class/net/docker0").exists()
    finally:
        if (folder / "pid").exists():
            subprocess.run([str(SCRIPTS / "dockerd-down")], env=env, timeout=120)
