"""The page actions on a real box: elements found by meaning and acted on through Chrome
DevTools, pages read and captured, tabs by label."""

from __future__ import annotations

import asyncio
import base64

import pytest
from page_kit import page, site_actions

from holm.adapters.base import Desktop
from holm.errors import NotFound, Timeout
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.results import expect

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

FORM = page(
    """<title>Form</title>
<h1>Sign up</h1>
<form action="javascript:void 0" onsubmit="document.body.innerHTML = '<h1>Details</h1>'">
  <label for="n">Name</label> <input id="n">
  <input placeholder="Email address" name="email">
  <label><input type="checkbox" id="news"> Newsletter</label>
  <select aria-label="Colour"><option>Red</option><option>Green</option></select>
  <button type="button" title="Help me">?</button>
  <img alt="A logo" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="10" height="10">
  <button>Continue</button>
</form>
<p>Some words <a href="#more">More information</a></p>"""
)


async def on(desktop: Desktop, what: a.ElementOp, **kw: object) -> r.ElementDone:
    return expect(await desktop.act(0, a.OnPage(what=what, **kw)), r.ElementDone)  # type: ignore[arg-type]


async def test_a_form_is_filled_and_sent_by_meaning(desktop: Desktop) -> None:
    opened = expect(await desktop.act(0, a.OpenUrl(url=FORM, label="form")), r.PageOpened)
    assert opened.label == "form" and opened.title == "Form"
    filled = await on(desktop, a.FillOp(query="Name", text="Ada"), tab="form")
    assert filled.element is not None
    assert (filled.element.role, filled.element.name, filled.element.value) == (
        "textbox",
        "Name",
        "Ada",
    )
    assert [(c.name, c.value) for c in filled.changed] == [("Name", "Ada")]
    assert not filled.navigated
    email = await on(desktop, a.FillOp(query="email address", text="ada@example.org"))
    assert email.element is not None and email.element.value == "ada@example.org"
    checked = await on(desktop, a.CheckOp(query="Newsletter"))
    assert checked.element is not None and checked.element.checked is True
    chosen = await on(desktop, a.ChooseOp(query="Colour", options=["Green"]))
    assert chosen.options == ["Green"]
    listed = await on(desktop, a.OptionsOp(query="combobox Colour"))
    assert listed.options == ["Red", "Green"]
    clicked = await on(desktop, a.ClickOp(query="button Continue"))
    assert clicked.element is not None and clicked.element.name == "Continue"
    waited = await on(desktop, a.WaitForOp(query="Details"))
    assert waited.matched == "Details" and waited.element is not None
    assert waited.element.role == "heading"


async def test_queries_by_title_alt_selector_and_xpath(desktop: Desktop) -> None:
    await desktop.act(0, a.OpenUrl(url=FORM))
    look = lambda q, **kw: desktop.act(0, a.Look(what=a.LookWhat(query=q, **kw)))  # noqa: E731
    help_ = expect(await look("Help me"), r.Found)
    assert help_.elements[0].tag == "button"
    logo = expect(await look("A logo"), r.Found)
    assert logo.elements[0].role == "img"
    css = expect(await look("input[name=email]"), r.Found)
    assert css.elements[0].name == "Email address"
    xpath = expect(await look("//button[last()]"), r.Found)
    assert xpath.elements[0].name == "Continue"
    link = expect(await look("more info", role="link"), r.Found)
    assert link.total == 1 and link.elements[0].name == "More information"
    exact = expect(await look("more information", exact=True), r.Found)
    assert exact.total == 0


async def test_a_query_matching_nothing_is_not_found_by_name(desktop: Desktop) -> None:
    await desktop.act(0, a.OpenUrl(url=FORM))
    with pytest.raises(NotFound, match="Nowhere to be seen"):
        await on(desktop, a.ClickOp(query="Nowhere to be seen"))
    with pytest.raises(Timeout, match="Nor here"):
        await on(desktop, a.WaitForOp(query="Nor here", within_ms=300))


async def test_a_link_click_navigates(desktop: Desktop) -> None:
    files = {
        "first.html": '<title>First</title><a href="second.html">Go on</a>',
        "second.html": "<title>Second</title><h1>Arrived</h1>",
    }
    for step in site_actions(files, 8711):
        result = await desktop.act(0, step)
        assert not isinstance(result, r.ExecResult) or result.code == 0, result
    target = "http://127.0.0.1:8711/second.html"
    await desktop.act(0, a.OpenUrl(url="http://127.0.0.1:8711/first.html"))
    clicked = await on(desktop, a.ClickOp(query="Go on"))
    assert clicked.navigated
    waited = await on(desktop, a.WaitForOp(query="Arrived"))
    assert waited.url == target
    back = await on(desktop, a.HistoryOp(go="back"))
    assert back.navigated
    await on(desktop, a.WaitForOp(query="Go on"))


async def test_read_snapshot_evaluate_and_shots(desktop: Desktop) -> None:
    await desktop.act(0, a.OpenUrl(url=FORM))
    md = expect(await desktop.act(0, a.Read()), r.PageText)
    assert "# Sign up" in md.text and md.title == "Form"
    assert [link.text for link in md.links] == ["More information"]
    text = expect(await desktop.act(0, a.Read(what=a.ReadWhat(format="text", limit=5))), r.PageText)
    assert text.text == "Sign " and text.cut
    snap = expect(await desktop.act(0, a.Snapshot()), r.PageSnapshot)
    assert ("textbox", "Name") in [(c.role, c.name) for c in snap.controls]
    await on(desktop, a.FillOp(query="Name", text="Bo"))
    delta = expect(
        await desktop.act(0, a.Snapshot(what=a.SnapshotWhat(delta=True))), r.PageSnapshot
    )
    assert [(c.name, c.value) for c in delta.controls] == [("Name", "Bo")]
    value = a.Evaluate(what=a.EvaluateWhat(expression="document.title + 1"))
    assert expect(await desktop.act(0, value), r.Evaluated).value == "Form1"
    long = a.Evaluate(what=a.EvaluateWhat(expression="'x'.repeat(50)", limit=10))
    cut = expect(await desktop.act(0, long), r.Evaluated)
    assert cut.cut and cut.value == '"xxxxxxxxx'
    shot = expect(await desktop.act(0, a.PageShot()), r.PageShotTaken)
    assert base64.b64decode(shot.data_base64).startswith(b"\x89PNG") and shot.width > 0
    tabs = expect(await desktop.act(0, a.Tabs()), r.TabList)
    captured = a.Capture(what=a.CaptureWhat(tab=tabs.tabs[0].tab))
    assert expect(await desktop.act(0, captured), r.Captured).hash.startswith("pg:")


async def test_a_dialog_is_answered(desktop: Desktop) -> None:
    await desktop.act(0, a.OpenUrl(url=page("<button onclick=\"alert('hi')\">Alert</button>")))
    with pytest.raises(NotFound, match="no dialog"):
        await desktop.act(0, a.Dialog())
    clicked = await on(desktop, a.ClickOp(query="Alert"))
    assert clicked.dialog == "hi"
    done = expect(await desktop.act(0, a.Dialog()), r.DialogDone)
    assert done == r.DialogDone(accepted=True, kind="alert", message="hi")
    await on(desktop, a.WaitForOp(query="Alert"))


async def test_the_console_says_what_the_page_logged(desktop: Desktop) -> None:
    logging = page(
        "<title>Console</title><script>console.log('hello', 42);"
        "console.error('bad thing');"
        "setTimeout(() => { window.logged = true; throw new Error('boom'); });</script>"
    )
    await desktop.act(0, a.OpenUrl(url=logging))
    await on(desktop, a.WaitForOp(load=True, until="window.logged"))
    log = expect(await desktop.act(0, a.Console()), r.ConsoleLog)
    texts = [(m.level, m.text) for m in log.messages]
    assert ("log", "hello 42") in texts and ("error", "bad thing") in texts
    errors = a.Console(what=a.ConsoleWhat(errors=True, clear=True))
    only = expect(await desktop.act(0, errors), r.ConsoleLog)
    assert {m.level for m in only.messages} <= {"error", "exception"}
    assert any("boom" in m.text for m in only.messages)
    assert expect(await desktop.act(0, a.Console()), r.ConsoleLog).messages == []


async def test_changed_counts_only_what_the_operation_changed(desktop: Desktop) -> None:
    # The controls an operation reports changed are those it changed, although the page
    # is read once per operation while nothing moves in it.
    await desktop.act(0, a.OpenUrl(url=CHANGING))
    idle = await on(desktop, a.ClickOp(query="button Nothing"))
    assert idle.changed == [] and not idle.navigated
    late = "document.body.insertAdjacentHTML('beforeend', '<button>Late</button>')"
    await desktop.act(0, a.Evaluate(what=a.EvaluateWhat(expression=late)))
    # "Late" came between two operations: it was there before this one.
    again = await on(desktop, a.ClickOp(query="button Nothing"))
    assert again.changed == []
    added = await on(desktop, a.ClickOp(query="button Add"))
    assert [(c.role, c.name) for c in added.changed] == [("button", "Added")]
    filled = await on(desktop, a.FillOp(query="Word", text="x"))
    assert [(c.name, c.value) for c in filled.changed] == [("Word", "x")]
    same = await on(desktop, a.FillOp(query="Word", text="x"))
    assert same.changed == [] and same.element is not None and same.element.value == "x"


CHANGING = page(
    "<title>Changing</title><input aria-label=Word>"
    "<button onclick='0'>Nothing</button>"
    "<button onclick=\"this.insertAdjacentHTML('afterend', '<button>Added</button>')\">"
    "Add</button>"
)


async def test_a_dialog_the_page_opens_on_its_own_is_answered(desktop: Desktop) -> None:
    # The page's DevTools session stays open between operations, so a dialog that no
    # operation caused is seen too.
    await desktop.act(
        0, a.OpenUrl(url=page("<script>setTimeout(() => confirm('later'), 200)</script>"))
    )
    for _ in range(100):
        try:
            done = expect(await desktop.act(0, a.Dialog(accept=False)), r.DialogDone)
            break
        except NotFound:
            await asyncio.sleep(0.05)
    else:
        raise AssertionError("the page's dialog was never seen")
    assert done == r.DialogDone(accepted=False, kind="confirm", message="later")


MOVES = page(
    "<title>Moves</title><button style='position:absolute;left:20px;top:20px'>Start</button>"
    "<button style='position:absolute;left:700px;top:500px'>Goal</button>"
    "<script>window.moves = []; addEventListener('mousemove', e => "
    "moves.push([e.clientX, e.clientY]));</script>"
)


async def test_page_pointer_motion_follows_the_desktop_s_paths(desktop: Desktop) -> None:
    await desktop.act(0, a.OpenUrl(url=MOVES))
    paths = []
    for motion, seed in (("instant", None), ("human", 7), ("human", 7), ("human", 8)):
        await on(desktop, a.HoverOp(query="button Start"))
        await desktop.act(0, a.Evaluate(what=a.EvaluateWhat(expression="moves.length = 0")))
        await on(desktop, a.ClickOp(query="button Goal", motion=motion, seed=seed))
        got = await desktop.act(0, a.Evaluate(what=a.EvaluateWhat(expression="moves")))
        paths.append([tuple(point) for point in expect(got, r.Evaluated).value])
    instant, human, again, other = paths
    assert len(instant) == 1 and len(human) > 10
    # The same seed from the same place: the same path; another seed: another.
    assert human == again and human != other
    assert human[-1] == instant[-1]


async def test_read_gives_a_data_url_link_as_its_type_and_cuts_in_the_page(
    desktop: Desktop,
) -> None:
    # A page made from a data: URL links to itself by its whole text: read out as such, it
    # would repeat the page in every link.
    long = page("<title>Long</title>" + "<p>word " * 2000 + "<a href='#end'>To the end</a>")
    await desktop.act(0, a.OpenUrl(url=long))
    md = expect(await desktop.act(0, a.Read()), r.PageText)
    assert md.links == [r.Link(text="To the end", url="data:text/html;charset=utf-8,…#end")]
    assert "[To the end](data:text/html;charset=utf-8,…#end)" in md.text
    cut = expect(await desktop.act(0, a.Read(what=a.ReadWhat(limit=100))), r.PageText)
    assert len(cut.text) == 100 and cut.cut
