"""The whole screen's PNG from bands kept: a `Screen` of the agent on a real Xvfb of its own
(own_screen.py), its PNGs decoded and checked against the pixels the X server gives the
test's own connection, and the bands deflated counted by `png_bands.DEFLATED`.

Every PNG is also compared, byte for byte, with the PNG of a whole-screen `region`, which
reads every pixel anew and keeps no band: a band wrongly kept would show there."""

from __future__ import annotations

from png_kit import decoded
from Xlib.display import Display

from holm.agent.frames.png_bands import BAND_ROWS, DEFLATED
from holm.agent.x11.screen import Screen
from holm.wire.values import Region

from .own_screen import HEIGHT, WIDTH, display, fill, painter, screen, window, x_pixels

__all__ = ["display", "painter", "screen"]  # fixtures

BANDS = -(-HEIGHT // BAND_ROWS)


async def shot(screen: Screen, painter: Display) -> tuple[bytes, int]:
    """The whole screen's PNG and the bands deflated for it, once it is checked: decoded it
    is what the X server shows, and it is the PNG of the same pixels read anew."""
    before = DEFLATED.bands
    frame = await screen.frame()
    deflated = DEFLATED.bands - before
    assert frame.png is not None
    assert decoded(frame.png).tobytes() == x_pixels(painter).tobytes()
    anew = await screen.frame(region=Region(0, 0, WIDTH, HEIGHT))
    assert anew.hash == frame.hash and anew.png == frame.png
    return frame.png, deflated


async def test_the_first_frame_deflates_every_band(screen: Screen, painter: Display) -> None:
    window(painter, 10, 10, 200, 100, 0xFF0000)
    window(painter, 300, 250, 300, 200, 0x00FF00)

    _, deflated = await shot(screen, painter)

    assert deflated == BANDS


async def test_a_still_screen_asked_again_deflates_nothing(
    screen: Screen, painter: Display
) -> None:
    window(painter, 10, 10, 200, 100, 0xFF0000)
    first, _ = await shot(screen, painter)

    again, deflated = await shot(screen, painter)

    assert (again, deflated) == (first, 0)


async def test_a_change_inside_one_band_deflates_that_band_only(
    screen: Screen, painter: Display
) -> None:
    shown = window(painter, 0, 0, WIDTH, HEIGHT, 0xFFFFFF)
    first, _ = await shot(screen, painter)

    # One pixel in band 2, in the middle of a tile.
    fill(painter, shown, 3 * BAND_ROWS + 10, 2 * BAND_ROWS + 20, 1, 1, 0x000000)
    changed, deflated = await shot(screen, painter)

    assert deflated == 1
    assert changed != first
    assert decoded(changed).getpixel((3 * BAND_ROWS + 10, 2 * BAND_ROWS + 20)) == (0, 0, 0)


async def test_a_change_across_bands_deflates_each_band_it_touches(
    screen: Screen, painter: Display
) -> None:
    window(painter, 0, 0, WIDTH, HEIGHT, 0xFFFFFF)
    await shot(screen, painter)

    # Rows 100 to 299: bands 1 to 4.
    window(painter, 50, 100, 100, 200, 0x0000FF)
    _, deflated = await shot(screen, painter)

    assert deflated == 4


async def test_a_window_moved_away_shows_what_was_under_it(
    screen: Screen, painter: Display
) -> None:
    window(painter, 0, 0, WIDTH, HEIGHT, 0xFFFFFF)
    # A window rather than a drawing: X paints it again when it is uncovered.
    window(painter, 40, 40, 30, 30, 0xFF0000)
    bare, _ = await shot(screen, painter)
    above = window(painter, 20, 20, 100, 100, 0x00FF00)
    covered, _ = await shot(screen, painter)

    above.configure(x=400, y=300)
    painter.sync()
    moved, deflated_moving = await shot(screen, painter)
    above.unmap()
    painter.sync()
    uncovered, deflated = await shot(screen, painter)

    assert len({bare, covered, moved}) == 3
    assert decoded(moved).getpixel((50, 50)) == (255, 0, 0)
    # Rows 20 to 119 (bands 0 and 1), where it was, and 300 to 399 (4 to 6), where it went.
    assert deflated_moving == 5
    # The same pixels as at first, the same PNG, with only the bands it left deflated.
    assert uncovered == bare
    assert deflated == 3


async def test_a_band_drawn_on_and_drawn_back_is_the_first_band_again(
    screen: Screen, painter: Display
) -> None:
    shown = window(painter, 0, 0, WIDTH, HEIGHT, 0xFFFFFF)
    first, _ = await shot(screen, painter)

    fill(painter, shown, 5, 5, 1, 1, 0x123456)
    changed, _ = await shot(screen, painter)
    fill(painter, shown, 5, 5, 1, 1, 0xFFFFFF)
    back, _ = await shot(screen, painter)

    assert changed != first == back
    assert decoded(changed).getpixel((5, 5)) == (0x12, 0x34, 0x56)
