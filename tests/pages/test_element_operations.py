"""The element operations no other test drives (`drag`, `focus`, `upload`, `highlight`,
`scroll`), each on a real page, and the 30 s caps of `wait_still` and `evaluate`
(docs/api.md: a longer wait is capped, not refused). One box for the module."""

from __future__ import annotations

import asyncio
import base64

import pytest
import pytest_asyncio
from page_kit import page

from holm.adapters.base import Desktop
from holm.errors import Timeout
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.results import expect

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

PAGE = page(
    """<title>Operations</title>
<style>#knob, #slot { display: inline-block; width: 60px; height: 40px; background: #9c9 }
#slot { background: #99c; margin-left: 300px } #list { height: 80px; overflow: auto }</style>
<script>window.told = [];
for (const kind of ["mousedown", "mouseup", "focus"])
  addEventListener(kind, e => e.target.id && told.push(`${kind}:${e.target.id}`), true);
</script>
<div id="knob">Knob</div><div id="slot">Slot</div>
<p><label>Nickname <input id="nick"></label></p>
<p><label>Portrait <input type="file" id="portrait"></label></p>
<p id="note">A note to point at</p>
<div id="list">"""
    + "".join(f"<p>Line {i}</p>" for i in range(30))
    + """</div>
<div style="height: 3000px"></div><p id="end">The end</p>"""
)


async def on(desktop: Desktop, what: a.ElementOp) -> r.ElementDone:
    return expect(await desktop.act(0, a.OnPage(what=what)), r.ElementDone)


async def evaluate(desktop: Desktop, expression: str, timeout_ms: int = 5000) -> object:
    what = a.EvaluateWhat(expression=expression, timeout_ms=timeout_ms)
    return expect(await desktop.act(0, a.Evaluate(what=what)), r.Evaluated).value


@pytest_asyncio.fixture(scope="module", loop_scope="module", autouse=True)
async def opened(desktop: Desktop) -> None:
    expect(await desktop.act(0, a.OpenUrl(url=PAGE)), r.PageOpened)


async def test_drag_presses_on_one_element_and_releases_on_the_other(desktop: Desktop) -> None:
    await evaluate(desktop, "told.length = 0")
    done = await on(desktop, a.DragOp(from_="Knob", to="Slot"))
    assert done.element is not None and done.element.name == "Knob"
    assert await evaluate(desktop, "told") == ["mousedown:knob", "mouseup:slot"]


async def test_focus_moves_the_focus_to_the_element(desktop: Desktop) -> None:
    done = await on(desktop, a.FocusOp(query="Nickname"))
    assert done.element is not None and done.element.name == "Nickname"
    assert await evaluate(desktop, "document.activeElement.id") == "nick"


async def test_upload_puts_files_of_the_box_in_a_file_input(desktop: Desktop) -> None:
    contents = base64.b64encode(b"a portrait").decode()
    write = a.WriteFile(what=a.WriteWhat(path="/tmp/portrait.txt", contents_base64=contents))
    await desktop.act(0, write)
    done = await on(desktop, a.UploadOp(query="Portrait", paths=["/tmp/portrait.txt"]))
    assert done.element is not None and done.element.name == "Portrait"
    text = "portrait.files.length === 1 ? portrait.files[0].text() : 'none'"
    assert await evaluate(desktop, text) == "a portrait"
    assert await evaluate(desktop, "portrait.files[0].name") == "portrait.txt"


async def test_highlight_outlines_the_element_for_its_ms(desktop: Desktop) -> None:
    done = await on(desktop, a.HighlightOp(query="A note to point at", ms=200))
    assert done.element is not None and done.element.tag == "p"
    assert await evaluate(desktop, "note.style.outline") == "rgb(238, 17, 17) solid 3px"
    # And put back after (a state the page reaches, polled a bounded number of times).
    for _ in range(50):
        if await evaluate(desktop, "note.style.outline") == "":
            break
        await asyncio.sleep(0.1)
    assert await evaluate(desktop, "note.style.outline") == ""


async def test_scroll_moves_the_page_or_an_element(desktop: Desktop) -> None:
    await on(desktop, a.ScrollOp(to="top"))
    assert await evaluate(desktop, "scrollY") == 0
    await on(desktop, a.ScrollOp(dy=300))
    assert await evaluate(desktop, "scrollY") == 300
    await on(desktop, a.ScrollOp(to="bottom"))
    at_bottom = "Math.abs(scrollY + innerHeight - document.documentElement.scrollHeight) < 2"
    assert await evaluate(desktop, at_bottom) is True
    # An element's own scrolling, and an element scrolled into view.
    listed = await on(desktop, a.ScrollOp(query="#list", to="bottom"))
    assert listed.element is not None and listed.element.tag == "div"
    assert await evaluate(desktop, "list.scrollTop + list.clientHeight === list.scrollHeight")
    await on(desktop, a.ScrollOp(to="top"))
    ended = await on(desktop, a.ScrollOp(query="The end"))
    assert ended.element is not None and ended.element.visible
    box = "end.getBoundingClientRect()"
    assert await evaluate(desktop, f"{box}.top >= 0 && {box}.bottom <= innerHeight") is True


async def test_waits_past_30_s_are_capped_at_30_s(desktop: Desktop) -> None:
    # Asked for two minutes each: a page that never answers, and a screen that never rests.
    spin = (
        "setInterval(() => { document.title = String(Date.now()); "
        "note.textContent = String(Math.random()); }, 50); null"
    )
    await evaluate(desktop, spin)
    never = a.EvaluateWhat(expression="new Promise(() => {})", timeout_ms=120_000)
    still = a.WaitStill(settle_ms=400, within_ms=120_000)
    evaluated, waited = await asyncio.gather(
        desktop.act(0, a.Evaluate(what=never)), desktop.act(0, still), return_exceptions=True
    )
    assert isinstance(evaluated, Timeout), evaluated
    assert "ran past 30000 ms" in evaluated.message
    stillness = expect(waited, r.Stillness)  # type: ignore[arg-type]
    # It stopped at the cap, not at what was asked for.
    assert not stillness.still and 30_000 <= stillness.waited_ms < 120_000
    await evaluate(desktop, "location.reload(), null")
