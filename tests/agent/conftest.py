"""A real agent process on real Xvfb displays (:200 and up), with Chromium, shared by the
tests of this folder; each test gets its own connection to it."""

from __future__ import annotations

import asyncio
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
from desktop_kit import tabs

from holm.adapters.agent_desktop import AgentDesktop

WIDTH, HEIGHT = 1280, 800


class RunningAgent(msgspec.Struct):
    proc: subprocess.Popen[bytes]
    run_dir: Path
    home: Path
    pages: Path

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


def start_agent(tmp: Path, *args: str) -> RunningAgent:
    """Start `python3 -m holm.agent` the way a runtime does: Debian's Python, the
    venv's packages on PYTHONPATH."""
    home, run_dir = tmp / "home", tmp / "run"
    home.mkdir(parents=True, exist_ok=True)
    env = agent_env(home)
    log = open(tmp / "agent.log", "wb")  # noqa: SIM115 - the child keeps it
    proc = subprocess.Popen(
        [SYSTEM_PYTHON, "-m", "holm.agent", "--run-dir", str(run_dir), *args],
        env=env,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    deadline = time.monotonic() + 20
    # The socket's file shows at bind(), a moment before listen(): wait until it accepts.
    while not _accepts(run_dir / "agent.sock"):
        assert proc.poll() is None, (tmp / "agent.log").read_text()
        assert time.monotonic() < deadline, "the agent did not listen on its socket"
        time.sleep(0.02)
    pages = tmp / "pages"
    pages.mkdir(exist_ok=True)
    return RunningAgent(proc=proc, run_dir=run_dir, home=home, pages=pages)


def stop_agent(agent: RunningAgent) -> int:
    """SIGTERM, and the agent's exit code; an agent that has ended already just gives it
    (so a test's `finally` may stop what the test may have stopped)."""
    if agent.proc.poll() is not None:
        return agent.proc.returncode
    agent.proc.send_signal(signal.SIGTERM)
    try:
        return agent.proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(agent.proc.pid, signal.SIGKILL)
        agent.proc.wait()
        raise


@pytest.fixture(scope="session")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningAgent]:
    running = start_agent(
        tmp_path_factory.mktemp("agent"),
        "--screens",
        "2",
        "--width",
        str(WIDTH),
        "--height",
        str(HEIGHT),
        "--display-base",
        "200",
    )
    yield running
    stop_agent(running)


@pytest.fixture
async def desktop(agent: RunningAgent) -> AsyncIterator[AgentDesktop]:
    d = await AgentDesktop.connect(agent.socket)
    await d.ready(90)
    yield d
    await d.close()


def write_page(agent: RunningAgent, name: str, html: str) -> str:
    path = agent.pages / name
    path.write_text(html)
    return path.as_uri()


async def page_title(desktop: AgentDesktop, screen: int, want: str, *, prefix: bool = False) -> str:
    """The front tab's title once it is `want` (or starts with it, with `prefix`): pages
    set it from JS events, a moment after the input that caused them. After 5 s, the title
    as it is then."""
    title = ""
    for _ in range(100):
        front = await tabs(desktop, screen)
        title = front[0].title if front else ""
        if title.startswith(want) if prefix else title == want:
            break
        await asyncio.sleep(0.05)
    return title
