"""`fill` of the inputs typed text cannot fill (date, time, datetime-local, month, week,
color, range) sets their value the way a browser takes it, and a fill whose value did not
take fails, never answers ok (a MiniWoB++ date used to answer `ok` with `"value": ""`)."""

from __future__ import annotations

import pytest
import pytest_asyncio
from page_kit import page

from holm.adapters.base import Desktop
from holm.errors import BadRequest, Failed
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.results import expect

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

# Each field tells the events it got in `window.told`.
PAGE = page(
    """<title>Inputs</title>
<script>window.told = [];
for (const kind of ["input", "change"]) addEventListener(kind, e =>
  told.push(`${e.target.id}:${kind}:${e.target.value}`), true);</script>
<label>Day <input type="date" id="day"></label>
<label>Clock <input type="time" id="clock"></label>
<label>Meeting <input type="datetime-local" id="meeting"></label>
<label>Month <input type="month" id="month"></label>
<label>Week <input type="week" id="week"></label>
<label>Colour <input type="color" id="colour"></label>
<label>Volume <input type="range" id="volume" min="0" max="10" step="1"></label>
<label>Nothing <input id="nothing" maxlength="0"></label>"""
)


async def on(desktop: Desktop, what: a.ElementOp) -> r.ElementDone:
    return expect(await desktop.act(0, a.OnPage(what=what)), r.ElementDone)


async def evaluate(desktop: Desktop, expression: str) -> object:
    got = await desktop.act(0, a.Evaluate(what=a.EvaluateWhat(expression=expression)))
    return expect(got, r.Evaluated).value


@pytest_asyncio.fixture(scope="module", loop_scope="module", autouse=True)
async def opened(desktop: Desktop) -> None:
    expect(await desktop.act(0, a.OpenUrl(url=PAGE)), r.PageOpened)


@pytest.mark.parametrize(
    ("query", "field", "text", "value"),
    [
        ("Day", "day", "2016-04-27", "2016-04-27"),
        ("Day", "day", "04/27/2016", "2016-04-27"),
        ("Clock", "clock", "14:05", "14:05"),
        ("Clock", "clock", "2:05 PM", "14:05"),
        ("Meeting", "meeting", "2024-02-29T09:30", "2024-02-29T09:30"),
        ("Month", "month", "2024-3", "2024-03"),
        ("Week", "week", "2024-W09", "2024-W09"),
        ("Colour", "colour", "#FF8800", "#ff8800"),
        ("Volume", "volume", "7", "7"),
    ],
)
async def test_each_type_is_filled_as_a_browser_takes_it(
    desktop: Desktop, query: str, field: str, text: str, value: str
) -> None:
    await evaluate(desktop, "told.length = 0")
    done = await on(desktop, a.FillOp(query=query, text=text))
    assert done.element is not None and done.element.value == value
    assert await evaluate(desktop, f"document.getElementById('{field}').value") == value
    # Its page heard of it as of a person's entry: an input event, then a change.
    assert await evaluate(desktop, "told") == [f"{field}:input:{value}", f"{field}:change:{value}"]


@pytest.mark.parametrize(
    ("query", "text", "why"),
    [
        ("Day", "next tuesday", "not a date"),
        ("Day", "2023-02-30", "not a date"),
        ("Clock", "25:00", "not a time"),
        ("Meeting", "2024-02-29", "not a date and time"),
        ("Month", "2024-13", "not a month"),
        ("Week", "2021-W53", "not a week of 2021"),
        ("Colour", "orange", "not a colour"),
        ("Volume", "loud", "not a number"),
    ],
)
async def test_what_is_no_value_of_its_type_is_refused_naming_why(
    desktop: Desktop, query: str, text: str, why: str
) -> None:
    with pytest.raises(BadRequest) as refused:
        await on(desktop, a.FillOp(query=query, text=text))
    assert why in refused.value.message and repr(text) in refused.value.message


async def test_a_fill_that_did_not_take_fails(desktop: Desktop) -> None:
    # Out of the range's steps: the browser holds another number.
    with pytest.raises(Failed) as off_range:
        await on(desktop, a.FillOp(query="Volume", text="42"))
    assert "did not take '42': it holds '10'" in off_range.value.message
    # A field that takes no text at all.
    with pytest.raises(Failed) as empty:
        await on(desktop, a.FillOp(query="Nothing", text="Ada"))
    assert "took none of the text" in empty.value.message
