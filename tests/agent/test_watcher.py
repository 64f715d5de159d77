"""The frame watcher on the real agent: woken by the X server's DAMAGE reports, it records
a change nobody told the server about (a page that changes by itself, a person at the
viewer), though it would not look on its own for an hour."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from agent_kit import HEIGHT, WIDTH

from holm.adapters.agent_desktop import AgentDesktop
from holm.engine.journal import Journal, entry, now_ms
from holm.engine.watcher import FrameWatchers
from holm.events.local import LocalStore
from holm.projections.events_feed import EventsFeed
from holm.wire import actions as a
from holm.wire.entries import BoxCreated, BoxReady, FrameSeen
from holm.wire.spec import DesktopSpec, Placement, Spec

from .conftest import RunningAgent, write_page

BOX = "box_watched"
SCREEN = 1
COALESCE_SECS = 0.05
# No look but the first unless something wakes the watcher.
IDLE_SECS = 3600.0
# A page that changes by itself a moment after it loads: nobody asks for that change.
LATE_RED = """<!doctype html><html><body style="margin:0;background:#fff">
<script>setTimeout(() => { document.body.style.background = '#f00'; }, 700);</script>
</body></html>"""


@pytest.fixture
async def watched(
    tmp_path: Path, desktop: AgentDesktop
) -> AsyncIterator[tuple[Journal, FrameWatchers]]:
    store = LocalStore(tmp_path / "traces")
    journal = Journal(store, EventsFeed())
    spec = Spec(desktop=DesktopSpec(screens=2, width=WIDTH, height=HEIGHT))
    created = entry(
        BoxCreated,
        "agent",
        box_id=BOX,
        runtime="local",
        spec=spec,
        placement=Placement(),
        spec_digest="sha256:test",
        expires_at_ms=now_ms() + 3_600_000,
    )
    await journal.append(BOX, [created, entry(BoxReady, "agent")])

    async def desktop_of(box_id: str) -> AgentDesktop:
        return desktop

    watchers = FrameWatchers(journal, store, desktop_of, COALESCE_SECS, IDLE_SECS)
    yield journal, watchers
    await watchers.close()
    await journal.close()


async def frames(journal: Journal) -> list[FrameSeen]:
    entries = await journal.store.read(BOX)
    return [e for e in entries if isinstance(e, FrameSeen) and e.screen == SCREEN]


async def until_frame(journal: Journal, frame_hash: str) -> list[FrameSeen]:
    """Wait (bounded) until the last frame recorded is `frame_hash`."""
    for _ in range(600):
        seen = await frames(journal)
        if seen and seen[-1].frame == frame_hash:
            return seen
        await asyncio.sleep(0.05)
    return await frames(journal)


async def test_the_watcher_records_a_change_nobody_asked_about(
    desktop: AgentDesktop, agent: RunningAgent, watched: tuple[Journal, FrameWatchers]
) -> None:
    journal, watchers = watched
    await desktop.act(SCREEN, a.OpenUrl(url="about:blank"))
    await desktop.act(SCREEN, a.WaitStill(settle_ms=300))
    blank, _, _ = await desktop.frame_hash(SCREEN)
    watchers.start(BOX)
    assert [f.frame for f in await until_frame(journal, blank)] == [blank]

    # Straight to the desktop, as a person's input would be: the server sees nothing and
    # nudges no watcher. The page turns red by itself later still.
    await desktop.act(SCREEN, a.OpenUrl(url=write_page(agent, "late-red.html", LATE_RED)))
    await desktop.act(SCREEN, a.WaitStill(settle_ms=1500, within_ms=10_000))
    red, _, _ = await desktop.frame_hash(SCREEN)
    seen = await until_frame(journal, red)

    assert seen[0].frame == blank and seen[-1].frame == red != blank
    png = await journal.store.get_frame(BOX, red)
    assert png is not None and png.startswith(b"\x89PNG")
