"""The window watch (window_watch.py) on a `Screen` of this process over a real Xvfb
(own_screen.py): a listing is kept while nothing a listing shows changed, even right after
events the watch takes and does not count; a change it counts gives a fresh one."""

from __future__ import annotations

from Xlib import Xatom
from Xlib.display import Display

from holm.agent.x11.screen import Screen

from .own_screen import display, painter, screen, window

__all__ = ["display", "painter", "screen"]  # fixtures


def uncounted_changes(painter: Display, count: int) -> None:
    """Property changes on the root that no listing shows (as programs set
    `_NET_WM_USER_TIME` on every input event): events the watch must take, and not count."""
    root = painter.screen().root
    name = painter.intern_atom("HOLM_TEST_NOISE")
    for n in range(count):
        root.change_property(name, Xatom.CARDINAL, 32, [n])
    painter.sync()


async def test_a_listing_is_kept_through_events_that_change_nothing_it_shows(
    screen: Screen, painter: Display
) -> None:
    first = await screen.windows()
    assert screen.window_watch is not None
    changes = screen.window_watch.changes
    # However busy the machine, the wait is not what this test looks at.
    screen.windows_settle_s = 10.0
    # Right after them, the watch's thread is still taking them: the listing waits for it
    # rather than reading every window again.
    uncounted_changes(painter, 100)
    assert await screen.windows() is first
    assert screen.window_watch.changes == changes


async def test_a_change_a_listing_shows_gives_a_fresh_listing(
    screen: Screen, painter: Display
) -> None:
    first = await screen.windows()
    uncounted_changes(painter, 100)
    shown = window(painter, 10, 10, 50, 50, 0x00FF00)
    shown.set_wm_name("counted")
    painter.sync()
    again = await screen.windows()
    assert again is not first
