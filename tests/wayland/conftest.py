"""One real agent with Wayland screens (headless sway, Chromium on Wayland), shared by the
tests of this folder (started as tests/agent's X11 one is); each test gets its own
connection to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from agent_kit import RunningAgent, connected, start_shared_agent, stop_agent

from holm.adapters.agent_desktop import AgentDesktop


@pytest.fixture(scope="session")
def wayland_agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningAgent]:
    # Chromium runs as root here as in a box; its pages are files sway's uid need not read.
    running = start_shared_agent(tmp_path_factory.mktemp("wayland"), "--server", "wayland")
    yield running
    stop_agent(running)


@pytest.fixture
async def desktop(wayland_agent: RunningAgent) -> AsyncIterator[AgentDesktop]:
    async with connected(wayland_agent) as d:
        yield d
