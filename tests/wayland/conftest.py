"""One real agent with Wayland screens (headless sway, Chromium on Wayland), shared by the
tests of this folder; each test gets its own connection to it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import msgspec
import pytest
from agent_kit import SYSTEM_PYTHON, agent_env

from holm.adapters.agent_desktop import AgentDesktop

WIDTH, HEIGHT = 1280, 800


class WaylandAgent(msgspec.Struct):
    proc: subprocess.Popen[bytes]
    run_dir: Path
    home: Path
    pages: Path
    log: Path

    @property
    def socket(self) -> Path:
        return self.run_dir / "agent.sock"


def _accepts(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


@pytest.fixture(scope="session")
def wayland_agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WaylandAgent]:
    tmp = tmp_path_factory.mktemp("wayland")
    home, run_dir, pages = tmp / "home", tmp / "run", tmp / "pages"
    home.mkdir()
    pages.mkdir()
    # Chromium runs as root here as in a box; its pages are files sway's uid need not read.
    log = tmp / "agent.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                SYSTEM_PYTHON,
                "-m",
                "holm.agent",
                "--run-dir",
                str(run_dir),
                "--server",
                "wayland",
                "--screens",
                "2",
                "--width",
                str(WIDTH),
                "--height",
                str(HEIGHT),
            ],
            env=agent_env(home),
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    deadline = time.monotonic() + 20
    while not _accepts(run_dir / "agent.sock"):
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the agent did not listen on its socket"
        time.sleep(0.02)
    yield WaylandAgent(proc=proc, run_dir=run_dir, home=home, pages=pages, log=log)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture
async def desktop(wayland_agent: WaylandAgent) -> AsyncIterator[AgentDesktop]:
    d = await AgentDesktop.connect(wayland_agent.socket)
    await d.ready(90)
    yield d
    await d.close()
