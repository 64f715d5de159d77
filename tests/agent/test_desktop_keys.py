"""Keys a person's desktop gives a meaning of its own (a screenshot tool, the browser's
help, another desktop): none of them opens a window, a tab or a dialog in a box, or hides
what is there."""

from __future__ import annotations

import asyncio

from desktop_kit import tabs

from holm.adapters.agent_desktop import AgentDesktop
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.values import Point

from .conftest import RunningAgent, write_page

# F7 turns caret browsing on, and again off, with no dialog to take the keyboard between
# (one asked first, and the second F7 went to it).
KEYS = ["Print", "alt+Print", "F1", "F7 F7", "super+e", "super+d", "ctrl+alt+Right", "alt+space"]


async def _windows(desktop: AgentDesktop) -> list[tuple[str, str, bool]]:
    listed = await desktop.act(0, a.Windows())
    assert isinstance(listed, r.WindowList)
    return sorted((w.id, w.class_, w.minimised) for w in listed.windows)


async def test_no_key_opens_a_dialog_or_a_page(desktop: AgentDesktop, agent: RunningAgent) -> None:
    await desktop.act(0, a.OpenUrl(url=write_page(agent, "plain.html", "<title>plain</title>")))
    await desktop.act(0, a.Click(at=Point(x=640, y=500)))

    async def state() -> tuple[object, ...]:
        # A dialog drawn inside Chromium's window (F7's caret browsing question) is no
        # window of its own: the frame shows it.
        still = await desktop.act(0, a.WaitStill(settle_ms=500, within_ms=5000))
        assert isinstance(still, r.Stillness) and still.still
        frame = (await desktop.frame_hash(0))[0]
        return await _windows(desktop), [(t.tab, t.url) for t in await tabs(desktop, 0)], frame

    before = await state()
    seen = {}
    for key in KEYS:
        await desktop.act(0, a.Press(then=key))
        # What a key opens comes a moment after it (a program started, a tab loaded).
        await asyncio.sleep(1)
        seen[key] = await state()
    assert seen == {key: before for key in KEYS}
