"""A real agent process on real Xvfb displays (:200 and up), with Chromium, shared by the
tests of this folder; each test gets its own connection to it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from agent_kit import RunningAgent, connected, start_shared_agent, stop_agent
from desktop_kit import tabs

from holm.adapters.agent_desktop import AgentDesktop
from holm.wire import actions as a
from holm.wire.values import Point


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


# Where a page's first click goes: below its inputs and right of its text on every page here.
FIRST_CLICK = Point(x=1100, y=700)
FIRST_CLICK_TRIES = 3


async def page_origin(
    desktop: AgentDesktop, agent: RunningAgent, name: str, html: str
) -> tuple[int, int]:
    """Open `html`, whose first `mousedown` titles it `at:X,Y` (where its (0, 0) is on the
    screen), and click into it until it says. A first click was lost once in CI with both
    cores busy (the title still the file's name 5 s after it): the press came while the
    page that had just loaded was not yet taking input. What these tests try comes after."""
    await desktop.act(0, a.OpenUrl(url=write_page(agent, name, html)))
    title = ""
    for _ in range(FIRST_CLICK_TRIES):
        await desktop.act(0, a.Click(at=FIRST_CLICK))
        title = await page_title(desktop, 0, "at:", prefix=True)
        if title.startswith("at:"):
            break
    assert title.startswith("at:"), f"the page took none of {FIRST_CLICK_TRIES} clicks: {title!r}"
    left, top = map(int, title[3:].split(","))
    return left, top
