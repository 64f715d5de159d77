"""What the tests of tests/agent (and tests/wayland) share to run holm's code the way a box
does: its environment, and a real agent process started and stopped."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec

from holm.adapters.agent_desktop import AgentDesktop

REPO = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"


def agent_env(home: Path) -> dict[str, str]:
    """The environment of holm's code run by Debian's Python, as in a box: the venv's
    packages on PYTHONPATH."""
    site = next((REPO / ".venv" / "lib").glob("python3*/site-packages"))
    return {
        "HOME": str(home),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": f"{REPO}:{site}",
        "LANG": "C.UTF-8",
    }


def alive(pid: int) -> bool:
    """Whether pid runs and is not a zombie; it may be reaped between any two looks."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


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


# The screens of the agent each test folder shares (tests/agent's X11 one, tests/wayland's).
WIDTH, HEIGHT = 1280, 800


def start_shared_agent(tmp: Path, *args: str) -> RunningAgent:
    """The agent a folder's tests share: two screens of WIDTH×HEIGHT, and `args`."""
    return start_agent(tmp, "--screens", "2", "--width", str(WIDTH), "--height", str(HEIGHT), *args)


@contextlib.asynccontextmanager
async def connected(agent: RunningAgent) -> AsyncIterator[AgentDesktop]:
    """A connection of a test's own to the agent, once its desktop is up."""
    desktop = await AgentDesktop.connect(agent.socket)
    try:
        await desktop.ready(90)
        yield desktop
    finally:
        await desktop.close()
