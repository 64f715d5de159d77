"""Clicks with their counts and modifiers, the mouse's side buttons, and scrolls in notches
and in pixels, as a real Chromium page sees them."""

from __future__ import annotations

import asyncio
from typing import Any

from holm.adapters.agent_desktop import AgentDesktop
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.values import Point

from .conftest import RunningAgent, page_origin

POINTER_PAGE = """<!doctype html><html><body style="margin:0;height:20000px;width:20000px">
<p id="para" style="position:absolute;left:50px;top:300px;width:500px">one two three four</p>
<script>
window.log = [];
const mods = e => (e.shiftKey ? 'S' : '') + (e.ctrlKey ? 'C' : '') + (e.altKey ? 'A' : '') +
  (e.metaKey ? 'M' : '');
for (const kind of ['click', 'dblclick', 'auxclick', 'mouseup'])
  document.addEventListener(kind, e => window.log.push([kind, e.detail, e.button, mods(e)]));
document.addEventListener('wheel', e => {
  window.log.push(['wheel', Math.sign(e.deltaX), Math.sign(e.deltaY), mods(e)]);
  if (e.ctrlKey) e.preventDefault();
}, {passive: false});
document.addEventListener('contextmenu', e => e.preventDefault());
// The side buttons go back and forward in the tab's history unless the page keeps them.
document.addEventListener('mouseup', e => { if (e.button > 2) e.preventDefault(); });
document.addEventListener('mousedown', e => {
  document.title = 'at:' + (e.screenX - e.clientX) + ',' + (e.screenY - e.clientY)}, {once: true});
</script></body></html>"""


async def _evaluate(desktop: AgentDesktop, expression: str) -> Any:
    got = await desktop.act(0, a.Evaluate(what=a.EvaluateWhat(expression=expression)))
    assert isinstance(got, r.Evaluated)
    return got.value


async def _settled(desktop: AgentDesktop, expression: str) -> Any:
    """`expression`'s value once two reads 50 ms apart agree (events and scrolls reach the
    page a moment after the input answered)."""
    value = None
    for _ in range(40):
        await asyncio.sleep(0.05)
        now = await _evaluate(desktop, expression)
        if now == value:
            break
        value = now
    return value


async def _open(desktop: AgentDesktop, agent: RunningAgent) -> tuple[int, int]:
    left, top = await page_origin(desktop, agent, "pointer.html", POINTER_PAGE)
    await _settled(desktop, "window.log.length")
    await _evaluate(desktop, "window.log = []")
    return left, top


async def test_clicks_carry_their_count_and_modifiers(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    left, top = await _open(desktop, agent)
    at = Point(x=left + 100, y=top + 310)
    await desktop.act(0, a.Click(at=at, count=3))
    assert await _settled(desktop, "window.log.filter(e => e[0] === 'click')") == [
        ["click", 1, 0, ""],
        ["click", 2, 0, ""],
        ["click", 3, 0, ""],
    ]
    # A triple click selects the paragraph.
    assert await _evaluate(desktop, "getSelection().toString().trim()") == "one two three four"
    await _evaluate(desktop, "window.log = []")
    await desktop.act(0, a.DoubleClick(at=Point(x=left + 700, y=top + 500), held=["shift"]))
    assert await _settled(desktop, "window.log.filter(e => e[0] === 'dblclick')") == [
        ["dblclick", 2, 0, "S"]
    ]
    await _evaluate(desktop, "window.log = []")
    await desktop.act(
        0, a.Click(at=Point(x=left + 700, y=top + 500), button="right", held=["ctrl"])
    )
    assert await _settled(desktop, "window.log.filter(e => e[0] === 'auxclick')") == [
        ["auxclick", 1, 2, "C"]
    ]
    await _evaluate(desktop, "window.log = []")
    await desktop.act(0, a.Click(at=Point(x=left + 700, y=top + 500), button="back"))
    assert await _settled(desktop, "window.log.filter(e => e[0] === 'mouseup')") == [
        ["mouseup", 1, 3, ""]
    ]


async def test_a_scroll_in_pixels_moves_the_page_by_about_that_much(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    left, top = await _open(desktop, agent)
    at = Point(x=left + 600, y=top + 400)
    await desktop.act(0, a.Scroll(at=at, dy=1))
    one = await _settled(desktop, "scrollY")
    await desktop.act(0, a.Scroll(at=at, dy_px=50))
    fifty = await _settled(desktop, "scrollY")
    await desktop.act(0, a.Scroll(at=at, dx_px=160))
    sideways = await _settled(desktop, "scrollX")
    # X's wheel moves the page by whole notches; pixels go to the page as they are asked.
    assert (one, fifty - one, sideways) == (a.PIXELS_PER_NOTCH, 50, 160)
    await _evaluate(desktop, "window.log = []")
    await desktop.act(0, a.Scroll(at=at, dy=-1, held=["ctrl"]))
    await desktop.act(0, a.Scroll(at=at, dy_px=-30, held=["shift"]))
    assert await _settled(desktop, "window.log.filter(e => e[0] === 'wheel')") == [
        ["wheel", 0, -1, "C"],
        ["wheel", 0, -1, "S"],
    ]
    # Off the page (on Chromium's toolbar) pixels are whole notches of X's wheel.
    await desktop.act(0, a.Scroll(at=Point(x=left + 600, y=top // 2), dy_px=10))
