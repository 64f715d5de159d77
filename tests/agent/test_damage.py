"""Frames from DAMAGE: a screen's hash comes from tiles read again only where the X server
reported drawing. A `Screen` of the agent on a real Xvfb of its own (no window manager, no
Chromium: nothing draws but the test), the pixels it reads counted by `tiles.READS`."""

from __future__ import annotations

import msgspec
from Xlib.display import Display

from holm.adapters.agent.__main__ import parse
from holm.adapters.agent.command import agent_command, frame_key
from holm.adapters.agent.screen import Screen
from holm.adapters.agent.tiles import READS, TILE, FrameHasher, Reads
from holm.wire.values import Region

from .own_screen import HEIGHT, KEY, WIDTH, display, painter, screen, window

__all__ = ["display", "painter", "screen"]  # fixtures


def counted() -> Reads:
    return msgspec.structs.replace(READS)


def read_since(before: Reads) -> Reads:
    return Reads(pixels=READS.pixels - before.pixels, tiles=READS.tiles - before.tiles)


async def whole_read(screen: Screen) -> str:
    """The screen's hash from every pixel read anew: a region capture does not use the
    grid."""
    frame = await screen.frame(region=Region(0, 0, WIDTH, HEIGHT))
    return frame.hash


async def test_a_still_screen_answers_unchanged_without_reading_a_pixel(
    screen: Screen, painter: Display
) -> None:
    window(painter, 10, 10, 200, 100, 0xFF0000)
    first, width, height = await screen.frame_hash()
    assert (width, height) == (WIDTH, HEIGHT)
    before = counted()

    again, _, _ = await screen.frame_hash()
    frame = await screen.frame(have=first)

    assert again == first == frame.hash
    assert frame.unchanged and frame.png is None
    assert read_since(before) == Reads(pixels=0, tiles=0)


async def test_one_pixel_changed_changes_the_hash_and_only_its_tile_is_read(
    screen: Screen, painter: Display
) -> None:
    shown = window(painter, 0, 0, WIDTH, HEIGHT, 0xFFFFFF)
    first, _, _ = await screen.frame_hash()
    before = counted()

    # In the tile of column 3, row 2: (3 * 64 + 10, 2 * 64 + 20).
    shown.fill_rectangle(shown.create_gc(foreground=0x000000), 3 * TILE + 10, 2 * TILE + 20, 1, 1)
    painter.sync()
    changed, _, _ = await screen.frame_hash()

    assert changed != first
    assert read_since(before) == Reads(pixels=TILE * TILE, tiles=1)
    assert changed == await whole_read(screen)


async def test_a_change_under_a_window_shows_when_the_window_goes(
    screen: Screen, painter: Display
) -> None:
    below = window(painter, 0, 0, 320, 240, 0xFF0000)
    bare, _, _ = await screen.frame_hash()
    # A window over it and gone again: the same picture, the same hash.
    above = window(painter, 100, 100, 100, 100, 0xFFFFFF)
    covered, _, _ = await screen.frame_hash()
    above.unmap()
    painter.sync()
    assert (await screen.frame_hash())[0] == bare != covered

    # Changed while covered: the X server paints only what shows of it, and the rest when
    # the window above goes.
    above.map()
    below.change_attributes(background_pixel=0x0000FF)
    below.clear_area()
    painter.sync()
    changed_under, _, _ = await screen.frame_hash()
    above.unmap()
    painter.sync()
    uncovered, _, _ = await screen.frame_hash()

    assert len({bare, covered, changed_under, uncovered}) == 4
    assert uncovered == await whole_read(screen)
    image = await screen.frame()
    assert image.hash == uncovered and image.png is not None


async def test_changes_are_counted_as_the_x_server_reports_them(
    screen: Screen, painter: Display
) -> None:
    now = await screen.await_change(-1, 0)
    # Nothing draws: the count stays where it is for as long as the wait.
    assert await screen.await_change(now, 300) == now

    window(painter, 50, 50, 20, 20, 0x00FF00)
    after = await screen.await_change(now, 30_000)

    assert after > now


async def test_hashes_are_the_keys_own() -> None:
    pixels = bytes(range(256)) * (TILE * TILE * 4 // 256)
    one, other = FrameHasher(KEY), FrameHasher(b"another server's key")

    assert one.picture(pixels, TILE, TILE) == FrameHasher(KEY).picture(pixels, TILE, TILE)
    assert one.picture(pixels, TILE, TILE) != other.picture(pixels, TILE, TILE)


def test_every_box_of_a_server_hashes_with_its_key() -> None:
    argv = agent_command(
        ["python3"], "/run/holm", screens=1, width=640, height=480, server_id="srv_a"
    )
    options, _ = parse(argv[argv.index("--run-dir") :])

    assert options.frame_key == frame_key("srv_a") != frame_key("srv_b")
    assert "--frame-key" not in agent_command(
        ["python3"], "/run/holm", screens=1, width=9, height=9
    )
