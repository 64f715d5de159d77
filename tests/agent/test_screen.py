"""Frames, clicks and the pointer on the real agent's Xvfb screens."""

from __future__ import annotations

import asyncio
import io

from agent_kit import HEIGHT, WIDTH
from desktop_kit import cursor
from PIL import Image

from holm.adapters.agent_desktop import AgentDesktop
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.values import Point, Region

from .conftest import RunningAgent, page_title, write_page

CLICK_PAGE = """<!doctype html><html><body style="margin:0;height:100vh;background:#fff">
<script>
document.addEventListener('contextmenu', e => e.preventDefault());
document.addEventListener('mousedown', e => {
  document.title = 'click:' + e.screenX + ',' + e.screenY + ':' + e.button;
});
</script></body></html>"""


async def test_ready_reports_every_screen(desktop: AgentDesktop) -> None:
    info = await desktop.ready(60)
    assert info.ready and info.failure is None
    assert [s.screen for s in info.screens] == [0, 1]
    assert len({s.display for s in info.screens}) == 2
    for s in info.screens:
        assert int(s.display.lstrip(":")) >= 200
        assert s.devtools_port and s.vnc_socket


async def test_an_unchanged_screen_gives_unchanged(desktop: AgentDesktop) -> None:
    still = r.expect(await desktop.act(1, a.WaitStill(settle_ms=300)), r.Stillness)
    assert still.still
    first = await desktop.frame(1)
    assert first.hash.startswith("px:") and first.png is not None
    image = Image.open(io.BytesIO(first.png))
    assert image.size == (WIDTH, HEIGHT) == (first.width, first.height)
    again = await desktop.frame(1, have=first.hash)
    assert again.unchanged and again.png is None and again.hash == first.hash
    digest, width, height = await desktop.frame_hash(1)
    assert (digest, width, height) == (first.hash, WIDTH, HEIGHT)
    # What wait_still answers is that same hash: the screen it saw settle.
    assert still.hash == first.hash


async def test_a_changed_screen_gives_a_new_hash(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    await desktop.act(
        1, a.OpenUrl(url=write_page(agent, "red.html", "<body style='background:#f00'>"))
    )
    await desktop.act(1, a.WaitStill(settle_ms=300))
    red = await desktop.frame(1)
    await desktop.act(
        1, a.OpenUrl(url=write_page(agent, "blue.html", "<body style='background:#00f'>"))
    )
    await desktop.act(1, a.WaitStill(settle_ms=300))
    blue = await desktop.frame(1, have=red.hash)
    assert not blue.unchanged and blue.hash != red.hash and blue.png is not None
    pixel = Image.open(io.BytesIO(blue.png)).convert("RGB").getpixel((WIDTH // 2, HEIGHT - 50))
    assert pixel == (0, 0, 255)


async def test_a_focused_text_field_leaves_the_screen_still(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    # A blinking caret would change the screen every 600 ms for as long as the field has
    # the focus: no poll would ever answer unchanged.
    page = write_page(agent, "field.html", "<input id=f autofocus style='font-size:40px'>")
    await desktop.act(1, a.OpenUrl(url=page))
    await desktop.act(1, a.Click(at=Point(x=100, y=120)))
    await desktop.act(1, a.Type(text="caret"))
    await desktop.act(1, a.WaitStill(settle_ms=300))
    first = await desktop.frame(1)
    for _ in range(8):
        await asyncio.sleep(0.2)
        assert (await desktop.frame(1, have=first.hash)).unchanged


async def test_region_and_scale(desktop: AgentDesktop) -> None:
    part = await desktop.frame(1, region=Region(x=10, y=20, width=300, height=200), scale=50)
    assert (part.width, part.height) == (150, 100)
    assert part.png is not None
    assert Image.open(io.BytesIO(part.png)).size == (150, 100)
    whole, _, _ = await desktop.frame_hash(1)
    assert part.hash != whole


async def test_a_click_lands_where_asked(desktop: AgentDesktop, agent: RunningAgent) -> None:
    await desktop.act(0, a.OpenUrl(url=write_page(agent, "click.html", CLICK_PAGE)))
    result = await desktop.act(0, a.Click(at=Point(x=640, y=500)))
    assert result == r.Pointed(at=Point(x=640, y=500))
    assert await cursor(desktop, 0) == Point(x=640, y=500)
    assert await page_title(desktop, 0, "click:640,500:0") == "click:640,500:0"
    await desktop.act(0, a.Click(at=Point(x=321, y=654), button="right"))
    assert await page_title(desktop, 0, "click:321,654:2") == "click:321,654:2"


async def test_smooth_and_human_motion_end_where_asked(desktop: AgentDesktop) -> None:
    for motion in ("smooth", "human"):
        result = await desktop.act(1, a.Move(to=Point(x=900, y=700), motion=motion, seed=7))
        # Only a human motion uses (and so answers) a seed.
        seed = 7 if motion == "human" else None
        assert result == r.Pointed(at=Point(x=900, y=700), seed=seed)
        assert await cursor(desktop, 1) == Point(x=900, y=700)
        await desktop.act(1, a.Move(to=Point(x=10, y=10)))


async def test_a_capture_on_one_screen_does_not_block_input_on_the_other(
    desktop: AgentDesktop,
) -> None:
    # Many full-size captures (each with a PNG encode) on screen 1, and clicks on screen 0
    # sent while they are in flight: the clicks finish before the captures do.
    captures = [asyncio.ensure_future(desktop.frame(1, scale=200)) for _ in range(4)]
    await asyncio.sleep(0)
    clicks_done = 0
    for i in range(10):
        await desktop.act(0, a.Move(to=Point(x=100 + i, y=100)))
        clicks_done += 1
    pending_captures = sum(not t.done() for t in captures)
    await asyncio.gather(*captures)
    assert clicks_done == 10
    assert pending_captures > 0
