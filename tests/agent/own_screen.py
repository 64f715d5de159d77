"""An agent `Screen` in this process, on a real Xvfb of its own (no window manager, no
Chromium: nothing draws or reads input but the test), for the tests that look inside it,
and the test's own X client (`painter`) to draw on it and read it back."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from PIL import Image
from Xlib import X
from Xlib.display import Display
from Xlib.xobject.drawable import Window

from holm.agent.desktop import desktop_up, processes
from holm.agent.frames.tiles import FrameHasher
from holm.agent.x11.screen import Screen

WIDTH, HEIGHT = 640, 480
DISPLAY_BASE = 350
KEY = b"the server's key"


@pytest.fixture
def display(tmp_path: Path) -> Iterator[str]:
    number, xvfb = desktop_up.start_xvfb(0, WIDTH, HEIGHT, DISPLAY_BASE, tmp_path, dict(os.environ))
    yield f":{number}"
    processes.kill_group(xvfb.pid)
    xvfb.wait()


@contextlib.asynccontextmanager
async def screen_on(display: str) -> AsyncIterator[Screen]:
    """An agent `Screen` of WIDTH×HEIGHT connected to `display`."""
    shown = Screen(0, WIDTH, HEIGHT, ThreadPoolExecutor(1), FrameHasher(KEY))
    await shown.connect(display)
    try:
        yield shown
    finally:
        shown.close()


@pytest.fixture
async def screen(display: str) -> AsyncIterator[Screen]:
    async with screen_on(display) as shown:
        yield shown


@pytest.fixture
def painter(display: str) -> Iterator[Display]:
    """The test's own X client: what it draws, the screen has to see."""
    conn = Display(display)
    yield conn
    conn.close()


def window(conn: Display, x: int, y: int, width: int, height: int, colour: int) -> Window:
    """A mapped window filled with `colour`, at (x, y) of the screen (no window manager
    here: it goes where it is put)."""
    made: Window = conn.screen().root.create_window(
        x, y, width, height, 0, X.CopyFromParent, background_pixel=colour, override_redirect=True
    )
    made.map()
    conn.sync()
    return made


def fill(
    conn: Display, where: Window, x: int, y: int, width: int, height: int, colour: int
) -> None:
    where.fill_rectangle(where.create_gc(foreground=colour), x, y, width, height)
    conn.sync()


def x_pixels(conn: Display) -> Image.Image:
    """The whole screen as the X server gives it to `conn` now, as RGB."""
    reply = conn.screen().root.get_image(0, 0, WIDTH, HEIGHT, X.ZPixmap, 0xFFFFFFFF)
    return Image.frombytes("RGB", (WIDTH, HEIGHT), bytes(reply.data), "raw", "BGRX")
