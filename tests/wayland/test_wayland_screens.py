"""More of a Wayland box through the agent: the human-like path and a drag read back from
the page, both clipboard selections, and a second screen that is its own."""

from __future__ import annotations

import asyncio
import io

import pytest
from agent_kit import RunningAgent
from desktop_kit import tabs
from PIL import Image

from holm.adapters.agent_desktop import AgentDesktop
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.values import Point

pytestmark = pytest.mark.desktop

DRAG_PAGE = """<!doctype html><title>still</title>
<body style="margin:0;height:100vh;background:rgb(0,128,0)"
 onmousemove="document.title = (event.buttons & 1) ? 'dragged' : 'moved:' + event.clientX">
</body>"""


async def _title(desktop: AgentDesktop, screen: int, want: str) -> str:
    title = ""
    for _ in range(100):
        front = await tabs(desktop, screen)
        title = front[0].title if front else ""
        if title.startswith(want):
            break
        await asyncio.sleep(0.05)
    return title


async def test_a_human_path_and_a_drag_reach_the_page(
    desktop: AgentDesktop, wayland_agent: RunningAgent
) -> None:
    page = wayland_agent.pages / "drag.html"
    page.write_text(DRAG_PAGE)
    await desktop.act(0, a.OpenUrl(url=page.as_uri()))
    moved = await desktop.act(0, a.Move(to=Point(x=700, y=500), motion="human", seed=7))
    assert moved == r.Pointed(at=Point(x=700, y=500), seed=7)
    assert await desktop.act(0, a.Cursor()) == Point(x=700, y=500)
    assert (await _title(desktop, 0, "moved:")).startswith("moved:")
    await desktop.act(0, a.Drag(from_=Point(x=300, y=400), to=Point(x=900, y=600)))
    assert await _title(desktop, 0, "dragged") == "dragged"


async def test_both_selections_are_set_and_read(desktop: AgentDesktop) -> None:
    for selection, text in (("clipboard", "Grüße ✓ 1"), ("primary", "the primary one")):
        done = await desktop.act(0, a.Clipboard(selection=selection, text=text))  # type: ignore[arg-type]
        assert done == r.ClipboardView(selection=selection, length=len(text.encode()))  # type: ignore[arg-type]
    for selection, text in (("clipboard", "Grüße ✓ 1"), ("primary", "the primary one")):
        read = await desktop.act(0, a.Clipboard(selection=selection))  # type: ignore[arg-type]
        assert read == r.ClipboardView(selection=selection, length=len(text.encode()), text=text)  # type: ignore[arg-type]


async def test_the_second_screen_is_its_own(
    desktop: AgentDesktop, wayland_agent: RunningAgent
) -> None:
    page = wayland_agent.pages / "blue.html"
    page.write_text('<body style="margin:0;background:rgb(0,0,255)"></body>')
    await desktop.act(1, a.OpenUrl(url=page.as_uri()))
    await desktop.act(1, a.WaitStill(settle_ms=300, within_ms=5000))
    shots = [await desktop.frame(screen) for screen in (0, 1)]
    assert shots[0].hash != shots[1].hash
    assert shots[1].image is not None
    with Image.open(io.BytesIO(shots[1].image)) as shown:
        assert shown.getpixel((640, 500))[:3] == (0, 0, 255)
    (second,) = (await desktop.act(1, a.Windows())).windows  # type: ignore[union-attr]
    assert second.class_ == "chromium" and second.active
