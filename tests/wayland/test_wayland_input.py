"""Input on a Wayland screen (virtual pointer and keyboard), read back from Chromium's page:
a click lands where asked, typed text of any script arrives, chords and held keys work."""

from __future__ import annotations

import asyncio

import pytest
from agent_kit import RunningAgent
from desktop_kit import tabs

from holm.adapters.agent_desktop import AgentDesktop
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.values import Point

pytestmark = pytest.mark.desktop

PAGE = """<!doctype html><html><body style="margin:0">
<input id="box" style="position:fixed;left:200px;top:200px;width:600px;height:40px;font-size:20px">
<script>
const box = document.getElementById('box');
box.addEventListener('input', () => { document.title = 'value:' + box.value; });
document.addEventListener('mousedown', e => {
  document.title = 'down:' + e.screenX + ',' + e.screenY + ',' + e.clientX + ',' + e.clientY +
    ',' + e.button;
});
document.addEventListener('keydown', e => {
  if (e.ctrlKey && e.key === 'b') document.title = 'chord:ctrl+b';
});
// No context menu: its popup would take the next click.
document.addEventListener('contextmenu', e => e.preventDefault());
document.addEventListener('dblclick', e => { document.title = 'dblclick:' + e.detail; });
document.addEventListener('wheel', e => { document.title = 'wheel:' + Math.sign(e.deltaY); });
</script></body></html>"""


async def _title(desktop: AgentDesktop, want: str, prefix: bool = False, suffix: str = "") -> str:
    """The front tab's title once it is `want` (or starts with it, with `prefix`, and ends
    with `suffix`): pages set it from JS events, a moment after the input. After 5 s, the
    title as it is then."""
    title = ""
    for _ in range(100):
        front = await tabs(desktop, 0)
        title = front[0].title if front else ""
        if (title.startswith(want) and title.endswith(suffix)) if prefix else title == want:
            break
        await asyncio.sleep(0.05)
    return title


async def _open(desktop: AgentDesktop, agent: RunningAgent) -> tuple[int, int]:
    """Open the page; the screen's place of the page's (0, 0), from a first click (from
    its clientX and clientY: a Wayland window does not know its place on the screen, so a
    page's screenX is not the screen's)."""
    page = agent.pages / "input.html"
    page.write_text(PAGE)
    await desktop.act(0, a.OpenUrl(url=page.as_uri()))
    await asyncio.sleep(0.3)
    await desktop.act(0, a.Click(at=Point(x=1100, y=700)))
    title = await _title(desktop, "down:", prefix=True)
    _, _, cx, cy, button = map(int, title[5:].split(","))
    assert button == 0, title
    return 1100 - cx, 700 - cy


async def test_a_click_lands_where_asked(
    desktop: AgentDesktop, wayland_agent: RunningAgent
) -> None:
    left, top = await _open(desktop, wayland_agent)
    await desktop.act(0, a.Click(at=Point(x=left + 321, y=top + 456), button="right"))
    title = await _title(desktop, "down:", prefix=True, suffix=",321,456,2")
    assert title.endswith(",321,456,2"), title
    where = await desktop.act(0, a.Cursor())
    assert where == Point(x=left + 321, y=top + 456)


async def test_non_ascii_text_arrives_in_a_field(
    desktop: AgentDesktop, wayland_agent: RunningAgent
) -> None:
    left, top = await _open(desktop, wayland_agent)
    await desktop.act(0, a.Click(at=Point(x=left + 500, y=top + 220)))
    # More different characters than the keymap has spare keys (keymap.py): some are
    # rebound while the text is typed; and characters beyond the BMP (emoji), which a key
    # of their own keysym would not type (input.py's `_type_char`).
    text = "Hello, wörld! ✓ 日本 Ωμέγα Привет ñ€ 😀🎉 #1"
    assert await desktop.act(0, a.Type(text=text)) == r.Typed(typed=len(text))
    assert await _title(desktop, f"value:{text}") == f"value:{text}"
    await desktop.act(0, a.Press(chord=["ctrl+a"], then=["BackSpace"]))
    assert await _title(desktop, "value:") == "value:"
    await desktop.act(0, a.Press(chord=["ctrl", "b"]))
    assert await _title(desktop, "chord:ctrl+b") == "chord:ctrl+b"
    await desktop.act(0, a.KeyDown(key="shift"))
    await desktop.act(0, a.Press(chord=["x"]))
    await desktop.act(0, a.KeyUp(key="shift"))
    # The held Shift made the key an X.
    assert await _title(desktop, "value:X") == "value:X"


async def test_double_click_and_wheel(desktop: AgentDesktop, wayland_agent: RunningAgent) -> None:
    left, top = await _open(desktop, wayland_agent)
    await desktop.act(0, a.DoubleClick(at=Point(x=left + 400, y=top + 500)))
    assert await _title(desktop, "dblclick:2") == "dblclick:2"
    await desktop.act(0, a.Scroll(at=Point(x=left + 400, y=top + 500), dy=2))
    assert await _title(desktop, "wheel:1") == "wheel:1"
