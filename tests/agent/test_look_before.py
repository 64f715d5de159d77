"""The look before a step (`Screen.look_before`, engine/step_frames.py), on a real Xvfb of the
test's own with nothing drawing but the test: a still screen answers unchanged without
reading a pixel; a changed one is read before the step may go (what the step draws after
is not in the picture), its PNG kept for `kept_frame`; tiles drawn again with the same
pixels are compared, not hashed again."""

from __future__ import annotations

import asyncio
import io

import msgspec
from PIL import Image
from Xlib import X
from Xlib.display import Display

from holm.agent.frames.tiles import READS, TILE, FrameHasher, Reads
from holm.agent.x11.screen import Screen
from holm.errors import NotFound

from .own_screen import HEIGHT, KEY, WIDTH, display, fill, painter, screen, window

__all__ = ["display", "painter", "screen"]  # fixtures


def counted() -> Reads:
    return msgspec.structs.replace(READS)


def x_read(conn: Display) -> str:
    """The whole screen's hash from every pixel read anew by the test's own client."""
    reply = conn.screen().root.get_image(0, 0, WIDTH, HEIGHT, X.ZPixmap, 0xFFFFFFFF)
    return FrameHasher(KEY).picture(bytes(reply.data), WIDTH, HEIGHT)


async def drawn(screen: Screen, count: int) -> None:
    """Until the damage watch has counted a drawing past `count`: a look trusts its count
    (as fresh as the watch's word, about a millisecond), and the test draws and looks
    quicker than that."""
    assert await screen.await_change(count, 5000) > count


async def count_of(screen: Screen) -> int:
    return await screen.await_change(-1, 0)


async def look(screen: Screen, have: str | None) -> tuple[str, bool]:
    read: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    found = await screen.look_before(have, read)
    assert read.done()
    return found.hash, found.unchanged


async def test_a_still_screen_is_unchanged_with_no_pixel_read(
    screen: Screen, painter: Display
) -> None:
    window(painter, 10, 10, 200, 100, 0xFF0000)
    first, unchanged = await look(screen, None)
    assert not unchanged and first == x_read(painter)
    before, handed = counted(), screen.capture_lane.handed

    for _ in range(3):
        assert await look(screen, first) == (first, True)

    assert (READS.pixels, READS.tiles) == (before.pixels, before.tiles)
    assert screen.capture_lane.handed == handed


async def test_a_changed_screen_is_read_before_the_step_draws(
    screen: Screen, painter: Display
) -> None:
    shown = window(painter, 0, 0, WIDTH, HEIGHT, 0xFFFFFF)
    first, _ = await look(screen, None)
    count = await count_of(screen)
    fill(painter, shown, 3 * TILE, 2 * TILE, 10, 10, 0x0000FF)
    await drawn(screen, count)
    found_then = x_read(painter)

    # The step: drawn as soon as the look lets it go, while the look still hashes.
    read: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    read.add_done_callback(lambda _: fill(painter, shown, 0, 0, 10, 10, 0x00FF00))
    found = await screen.look_before(first, read, with_png=True)

    assert (found.hash, found.unchanged) == (found_then, False)
    kept = await screen.kept_frame(found.hash)
    assert kept.png is not None
    # Asked with it (a batch's last step), the look's answer carries the same picture, so
    # holmd need not ask for it.
    assert found.png == kept.png
    picture = Image.open(io.BytesIO(kept.png)).convert("RGB")
    assert picture.getpixel((3 * TILE + 5, 2 * TILE + 5)) == (0, 0, 255)
    assert picture.getpixel((5, 5)) == (255, 255, 255)
    # The next look finds what the step drew.
    await drawn(screen, found.changes or 0)
    after, unchanged = await look(screen, found.hash)
    assert not unchanged and after == x_read(painter) != found.hash


async def test_tiles_drawn_again_with_the_same_pixels_are_not_hashed_again(
    screen: Screen, painter: Display
) -> None:
    shown = window(painter, 0, 0, WIDTH, HEIGHT, 0xFFFFFF)
    first, _ = await look(screen, None)
    before, count = counted(), await count_of(screen)

    # Four tiles in a row repainted white on white.
    fill(painter, shown, 0, 0, 4 * TILE, TILE, 0xFFFFFF)
    await drawn(screen, count)

    assert await look(screen, first) == (first, True)
    assert READS.tiles == before.tiles and READS.same == before.same + 4
    assert READS.pixels == before.pixels + 4 * TILE * TILE


async def test_a_picture_not_looked_at_is_not_kept(screen: Screen) -> None:
    try:
        await screen.kept_frame("px:" + "0" * 40)
    except NotFound:
        return
    raise AssertionError("a picture never looked at was kept")


async def test_a_whole_screen_drawn_again_the_same_is_read_once_and_not_hashed(
    screen: Screen, painter: Display
) -> None:
    shown = window(painter, 0, 0, WIDTH, HEIGHT, 0xFFFFFF)
    first, _ = await look(screen, None)
    before, handed, count = counted(), screen.capture_lane.handed, await count_of(screen)

    fill(painter, shown, 0, 0, WIDTH, HEIGHT, 0xFFFFFF)
    await drawn(screen, count)

    assert await look(screen, first) == (first, True)
    assert READS.tiles == before.tiles and READS.pixels == before.pixels + WIDTH * HEIGHT
    assert READS.same > before.same
    # Compared on the loop: nothing was handed to the capture thread.
    assert screen.capture_lane.handed == handed
    # One pixel changed among them: that tile's run is hashed again.
    count = await count_of(screen)
    fill(painter, shown, 0, 0, WIDTH, HEIGHT, 0xFFFFFF)
    fill(painter, shown, 5, 5, 1, 1, 0x000000)
    await drawn(screen, count)
    changed, unchanged = await look(screen, first)
    assert not unchanged and changed == x_read(painter)
