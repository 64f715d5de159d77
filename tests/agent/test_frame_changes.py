"""A whole-screen frame tells the screen's count of changes read before its capture
(`FrameResult.changes`), which the server's still screens wait on; other captures tell none.
On a `Screen` of this process over a real Xvfb (own_screen.py)."""

from __future__ import annotations

from Xlib.display import Display

from holm.agent.x11.screen import Screen
from holm.wire.values import Region

from .own_screen import display, painter, screen, window

__all__ = ["display", "painter", "screen"]  # fixtures


async def test_a_whole_frame_tells_the_count_its_picture_holds(
    screen: Screen, painter: Display
) -> None:
    before = await screen.frame()
    assert before.changes == await screen.await_change(-1, 0)
    window(painter, 5, 5, 20, 20, 0xFF0000)
    # The drawing is counted; the next frame holds it and tells the count past it.
    counted = await screen.await_change(before.changes or 0, 5000)
    after = await screen.frame(have=before.hash)
    assert counted > (before.changes or 0)
    assert not after.unchanged and after.changes is not None and after.changes >= counted


async def test_other_captures_tell_no_count(screen: Screen) -> None:
    assert (await screen.frame(region=Region(0, 0, 64, 64))).changes is None
    assert (await screen.frame(scale=50)).changes is None
    assert (await screen.frame(pointer=True)).changes is None
