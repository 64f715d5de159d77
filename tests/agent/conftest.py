"""A real agent process on real Xvfb displays (:200 and up), with Chromium, shared by the
tests of this folder; each test gets its own connection to it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from agent_kit import RunningAgent, connected, start_shared_agent, stop_agent
from desktop_kit import tabs

from holm.adapters.agent_desktop import AgentDesktop


@pytest.fixture(scope="session")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningAgent]:
    running = start_shared_agent(tmp_path_factory.mktemp("agent"), "--display-base", "200")
    yield running
    stop_agent(running)


@pytest.fixture
async def desktop(agent: RunningAgent) -> AsyncIterator[AgentDesktop]:
    async with connected(agent) as d:
        yield d


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
