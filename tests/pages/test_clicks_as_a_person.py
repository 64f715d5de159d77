"""A click by meaning acts as a person would (Playwright's actionability): the element is
scrolled into view and clicked with trusted input once it is shown, enabled, at rest and
the first thing under its centre; otherwise the click fails naming why. `force: true`
clicks by script. A hidden checkbox behind its styled label is clicked on the label."""

from __future__ import annotations

import pytest
import pytest_asyncio
from page_kit import page

from holm.adapters.base import Desktop
from holm.errors import Failed
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.results import expect

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

# Each button counts its clicks, and whether they were trusted input, in `window.clicks`.
PAGE = page(
    """<title>Clicks</title>
<style>#cover { position: fixed; left: 0; top: 0; width: 400px; height: 200px; }
.styled input { display: none } .styled span { display: inline-block; padding: 4px }</style>
<script>window.clicks = {};
addEventListener("click", e => { const id = e.target.closest("[id]")?.id;
  if (id) clicks[id] = (clicks[id] || "") + (e.isTrusted ? "T" : "S"); }, true);</script>
<div role="tablist"><button role="tab" id="t1">General</button>
  <button role="tab" id="t2">Advanced</button></div>
<div role="tabpanel" id="p1">General settings</div>
<div role="tabpanel" id="p2" hidden><button id="purge">Purge cache</button></div>
<button id="gone" style="display: none">Gone away</button>
<button id="tiny" style="width: 0; height: 0; padding: 0; border: 0; overflow: hidden">Tiny</button>
<button id="off" disabled>Switched off</button>
<div style="position: relative; height: 220px">
  <button id="under" style="position: absolute; left: 20px; top: 20px">Under the cover</button>
  <div id="cover" style="position: absolute; background: #ccc"></div></div>
<label class="styled" id="terms"><input type="checkbox" id="agree">
  <span>Accept the terms</span></label>
<div style="height: 3000px"></div>
<button id="far">Far below</button>
<button id="late" hidden>Shown late</button>"""
)


async def on(desktop: Desktop, what: a.ElementOp) -> r.ElementDone:
    return expect(await desktop.act(0, a.OnPage(what=what)), r.ElementDone)


async def clicks(desktop: Desktop) -> dict[str, str]:
    got = expect(
        await desktop.act(0, a.Evaluate(what=a.EvaluateWhat(expression="clicks"))), r.Evaluated
    )
    assert isinstance(got.value, dict)
    return got.value


@pytest_asyncio.fixture(scope="module", loop_scope="module", autouse=True)
async def opened(desktop: Desktop) -> None:
    expect(await desktop.act(0, a.OpenUrl(url=PAGE)), r.PageOpened)


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("Purge cache", "is inside <div> that is not displayed (display: none)"),
        ("Gone away", "it is not displayed (display: none)"),
        ("Tiny", "it has no size (0x0)"),
        ("Switched off", "it is disabled"),
        ("Under the cover", "it is covered by"),
    ],
)
async def test_what_no_person_could_click_fails_naming_why(
    desktop: Desktop, query: str, why: str
) -> None:
    with pytest.raises(Failed) as failed:
        await on(desktop, a.ClickOp(query=query))
    assert why in failed.value.message and repr(query) in failed.value.message
    assert failed.value.retryable is False
    # Nothing was clicked.
    assert not set(await clicks(desktop)) & {"purge", "gone", "tiny", "off", "under"}


async def test_force_clicks_by_script(desktop: Desktop) -> None:
    done = await on(desktop, a.ClickOp(query="Gone away", force=True))
    assert done.element is not None and done.element.name == "Gone away"
    assert (await clicks(desktop))["gone"] == "S"


async def test_a_click_opens_the_tab_then_the_button_in_it_is_clicked(desktop: Desktop) -> None:
    opener = "t2.onclick = () => { p1.hidden = true; p2.hidden = false; }; null"
    await desktop.act(0, a.Evaluate(what=a.EvaluateWhat(expression=opener)))
    await on(desktop, a.ClickOp(query="tab Advanced"))
    await on(desktop, a.ClickOp(query="Purge cache"))
    got = await clicks(desktop)
    assert (got["t2"], got["purge"]) == ("T", "T")


async def test_a_click_scrolls_to_the_element_and_waits_for_it(desktop: Desktop) -> None:
    await on(desktop, a.ClickOp(query="Far below"))
    assert (await clicks(desktop))["far"] == "T"
    show = "setTimeout(() => { late.hidden = false; }, 300); null"
    await desktop.act(0, a.Evaluate(what=a.EvaluateWhat(expression=show)))
    await on(desktop, a.ClickOp(query="Shown late"))
    assert (await clicks(desktop))["late"] == "T"


async def test_a_styled_checkbox_is_clicked_on_its_label(desktop: Desktop) -> None:
    checked = await on(desktop, a.CheckOp(query="Accept the terms"))
    assert checked.element is not None and checked.element.checked is True
    unchecked = await on(desktop, a.ClickOp(query="checkbox Accept the terms"))
    assert unchecked.element is not None and unchecked.element.role == "checkbox"
    state = await desktop.act(0, a.Evaluate(what=a.EvaluateWhat(expression="agree.checked")))
    assert expect(state, r.Evaluated).value is False
    # Trusted clicks, on the label.
    assert (await clicks(desktop))["terms"].startswith("TT")
