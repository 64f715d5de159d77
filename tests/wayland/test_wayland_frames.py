"""Frames of a Wayland screen: from wlr-screencopy with damage, so a still screen answers
unchanged without reading a pixel; drawing changes the picture and its hash; regions,
scales and formats as on X11."""

from __future__ import annotations

import asyncio
import io
import tempfile
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import msgspec
import pytest
from agent_kit import RunningAgent
from PIL import Image

from holm.adapters.agent_desktop import AgentDesktop
from holm.agent.desktop import processes
from holm.agent.frames.tiles import READS, FrameHasher, Reads
from holm.agent.wayland import sway_up
from holm.agent.wayland.screen import Screen
from holm.wire import actions as a
from holm.wire.values import Encoding, Region

pytestmark = pytest.mark.desktop

WIDTH, HEIGHT = 640, 400


@pytest.fixture
async def own_screen() -> AsyncIterator[Screen]:
    """A Wayland `Screen` of the test's own, on a sway of its own with nothing on it."""
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(1) as pool:
        env = processes.box_env(tmp, None)
        sway = await asyncio.to_thread(sway_up.start_sway, 9, WIDTH, HEIGHT, Path(tmp), env)
        screen = Screen(0, WIDTH, HEIGHT, pool, FrameHasher(b"test"))
        screen.sway = sway
        try:
            await screen.connect(sway.socket)
            yield screen
        finally:
            screen.close()
            processes.kill_group(sway.proc.pid)
            sway.proc.wait()


async def test_a_still_screen_answers_unchanged_without_reading_a_pixel(
    own_screen: Screen,
) -> None:
    first = await own_screen.frame()
    assert first.image is not None and first.changes is not None
    with Image.open(io.BytesIO(first.image)) as shown:
        assert shown.size == (WIDTH, HEIGHT)
    # Any copy the compositor owed since its first is in by now (it answers at its next
    # output frame, 60 a second): a still screen owes none after.
    await asyncio.sleep(0.3)
    settled = await own_screen.frame()
    before = msgspec.structs.replace(READS)

    again = await own_screen.frame(have=settled.hash)
    hashed, _, _ = await own_screen.frame_hash()

    assert again.unchanged and again.image is None
    assert again.hash == hashed == settled.hash
    assert again.changes == settled.changes
    assert Reads(pixels=READS.pixels - before.pixels, tiles=READS.tiles - before.tiles) == Reads()


async def test_frames_follow_the_page_in_every_format(
    desktop: AgentDesktop, wayland_agent: RunningAgent
) -> None:
    page = wayland_agent.pages / "colour.html"
    page.write_text('<body style="margin:0;background:rgb(255,0,0)"></body>')
    await desktop.act(0, a.OpenUrl(url=page.as_uri()))
    await desktop.act(0, a.WaitStill(settle_ms=300, within_ms=5000))
    red = await desktop.frame(0)
    assert red.image is not None
    with Image.open(io.BytesIO(red.image)) as shown:
        assert shown.getpixel((640, 500))[:3] == (255, 0, 0)
    assert (await desktop.frame(0, have=red.hash)).unchanged

    await desktop.act(
        0,
        a.Evaluate(what=a.EvaluateWhat(expression="document.body.style.background='rgb(0,0,255)'")),
    )
    await desktop.act(0, a.WaitStill(settle_ms=300, within_ms=5000))
    blue = await desktop.frame(0, have=red.hash)
    assert not blue.unchanged and blue.image is not None and blue.hash != red.hash
    assert blue.changes is not None and red.changes is not None and blue.changes > red.changes
    with Image.open(io.BytesIO(blue.image)) as shown:
        assert shown.getpixel((640, 500))[:3] == (0, 0, 255)

    part = await desktop.frame(0, region=Region(600, 400, 100, 50), scale=50)
    assert (part.width, part.height) == (50, 25) and part.image is not None
    with Image.open(io.BytesIO(part.image)) as shown:
        assert shown.size == (50, 25) and shown.getpixel((10, 10))[:3] == (0, 0, 255)
    for fmt in ("jpeg", "webp"):
        coded = await desktop.frame(0, encoding=Encoding(format=fmt))  # type: ignore[arg-type]
        assert coded.format == fmt and coded.image is not None
        with Image.open(io.BytesIO(coded.image)) as shown:
            assert shown.format == fmt.upper() and shown.size == (1280, 800)
