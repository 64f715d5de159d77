"""Frames from DAMAGE: a screen's hash, or a region's, comes from tiles read again only
where the X server reported drawing. A `Screen` of the agent on a real Xvfb of its own (no
window manager, no Chromium: nothing draws but the test), the pixels it reads counted by
`tiles.READS`; and one on an Xvfb without DAMAGE, where every frame reads its pixels."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator

import msgspec
import pytest
from Xlib import X
from Xlib.display import Display

from holm.adapters.agent_command import agent_command, frame_key
from holm.agent.__main__ import parse
from holm.agent.frames.tiles import READS, TILE, FrameHasher, Reads
from holm.agent.x11.screen import Screen
from holm.wire.values import Region

from .own_screen import (
    HEIGHT,
    KEY,
    WIDTH,
    display,
    fill,
    painter,
    screen,
    screen_on,
    window,
)

__all__ = ["display", "painter", "screen"]  # fixtures


def counted() -> Reads:
    return msgspec.structs.replace(READS)


def read_since(before: Reads) -> Reads:
    return Reads(pixels=READS.pixels - before.pixels, tiles=READS.tiles - before.tiles)


WHOLE = Region(0, 0, WIDTH, HEIGHT)


def x_read(conn: Display, area: Region = WHOLE) -> str:
    """The hash of `area` from every pixel of it read anew by the test's own client: what
    the grid's answer must agree with. (Its tiles count in `READS`: read it after
    counting.)"""
    reply = conn.screen().root.get_image(
        area.x, area.y, area.width, area.height, X.ZPixmap, 0xFFFFFFFF
    )
    return FrameHasher(KEY).picture(bytes(reply.data), area.width, area.height)


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
    assert changed == x_read(painter)


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
    assert uncovered == x_read(painter)
    image = await screen.frame()
    assert image.hash == uncovered and image.png is not None


async def test_a_region_reads_only_its_own_tiles_drawn_on(screen: Screen, painter: Display) -> None:
    shown = window(painter, 0, 0, WIDTH, HEIGHT, 0xFFFFFF)
    await screen.frame_hash()
    # Two tiles wide and one high, not on tile edges: (100, 70) to (220, 110).
    area = Region(100, 70, 120, 40)
    first = await screen.frame(region=area)
    assert first.hash == x_read(painter, area) and first.png is not None

    # Still: answered from the pixels kept.
    before = counted()
    assert (await screen.frame(region=area, have=first.hash)).unchanged
    assert read_since(before) == Reads(pixels=0, tiles=0)

    # Drawn on outside it (tile column 8, row 5): the region reads nothing; the tile
    # stays due for the whole screen's next hash.
    gc = shown.create_gc(foreground=0x000000)
    shown.fill_rectangle(gc, 8 * TILE + 5, 5 * TILE + 5, 1, 1)
    painter.sync()
    before = counted()
    assert (await screen.frame(region=area, have=first.hash)).unchanged
    assert read_since(before) == Reads(pixels=0, tiles=0)
    whole, _, _ = await screen.frame_hash()
    assert read_since(before) == Reads(pixels=TILE * TILE, tiles=1)
    assert whole == x_read(painter)

    # Drawn on inside it (tile column 2, row 1): that one tile is read again.
    shown.fill_rectangle(gc, 2 * TILE + 30, 1 * TILE + 30, 1, 1)
    painter.sync()
    before = counted()
    changed = await screen.frame(region=area, have=first.hash)
    assert read_since(before).pixels == TILE * TILE
    assert not changed.unchanged and changed.hash == x_read(painter, area) != first.hash


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


@pytest.fixture
def bare_display() -> Iterator[str]:
    """An Xvfb without the DAMAGE extension, on the first free display it finds."""
    read, write = os.pipe()
    xvfb = subprocess.Popen(
        [
            *("Xvfb", "-displayfd", str(write), "-screen", "0", f"{WIDTH}x{HEIGHT}x24"),
            *("-nolisten", "tcp", "-extension", "DAMAGE"),
        ],
        pass_fds=(write,),
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(write)
    with os.fdopen(read) as told:
        number = told.readline().strip()
    yield f":{number}"
    os.killpg(xvfb.pid, signal.SIGTERM)
    xvfb.wait()


@pytest.fixture
async def bare_screen(bare_display: str) -> AsyncIterator[Screen]:
    async with screen_on(bare_display) as shown:
        yield shown


async def test_without_damage_every_frame_reads_its_pixels(
    bare_screen: Screen, bare_display: str
) -> None:
    painter = Display(bare_display)
    try:
        assert not painter.has_extension("DAMAGE")
        shown = window(painter, 0, 0, WIDTH, HEIGHT, 0xFFFFFF)
        area = Region(100, 70, 120, 40)
        part = await bare_screen.frame(region=area)
        assert part.hash == x_read(painter, area)
        before = counted()
        assert (await bare_screen.frame(region=area, have=part.hash)).unchanged
        assert read_since(before).pixels == area.width * area.height

        fill(painter, shown, 2 * TILE + 30, 1 * TILE + 30, 1, 1, 0x000000)
        before = counted()
        whole, _, _ = await bare_screen.frame_hash()
        changed = await bare_screen.frame(region=area, have=part.hash)
        assert read_since(before).pixels == WIDTH * HEIGHT + area.width * area.height
        assert whole == x_read(painter)
        assert changed.hash == x_read(painter, area) != part.hash
    finally:
        painter.close()
