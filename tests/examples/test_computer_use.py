"""The computer-use loops of examples/ on a real box, each with its recorded conversation
(examples/fixtures/): no model, no API key. What the page saw is what the conversation
did: the name typed into its field, Enter, a click on Send, a scroll; every answer the
model would have read is a PNG of the box's screen; and each action is in the trace."""

from __future__ import annotations

import base64
import io
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from kits.examples import EXAMPLES, example
from PIL import Image

from holm import Box

pytestmark = pytest.mark.desktop

FIXTURES = EXAMPLES / "fixtures"
FORM = "data:text/html," + quote((FIXTURES / "form.html").read_text())


def png_size(data: str) -> tuple[int, int]:
    picture = Image.open(io.BytesIO(base64.b64decode(data)))
    assert picture.format == "PNG"
    return picture.size


def settled(box: Box, expression: str, until: Callable[[Any], bool] = bool) -> Any:
    """`expression`'s value once `until` holds of it and two reads 50 ms apart agree, or
    after two seconds: a wheel reaches the page's scroll position a moment after the input
    answered (later still on a busy machine)."""
    value = None
    for _ in range(40):
        time.sleep(0.05)
        now = box.page.evaluate(expression)
        if now == value and until(now):
            break
        value = now
    return value


def acted(box: Box) -> list[str]:
    return [
        str(entry.action.__struct_config__.tag)
        for entry in box.trace().entries
        if type(entry).__struct_config__.tag == "acted"
    ]


def test_the_anthropic_loop_replays_its_conversation(shared_box: Box) -> None:
    box = shared_box
    box.open(FORM)
    before = len(acted(box))
    model = example("computer_use_anthropic.py").replay(FIXTURES / "anthropic_conversation.json")
    messages = example("computer_use_anthropic.py").run(
        box, "Fill the form with the name Ada", model
    )
    # The cursor's place is read, not done: it is no step of the trace.
    assert acted(box)[before:] == ["click", "type", "press", "click", "scroll"]
    # 8 responses: 7 asked for the computer and got a result, the last ended the turn.
    results = [
        block
        for message in messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
    ]
    assert len(results) == 7 and not any(result["is_error"] for result in results)
    images = [c for r in results for c in r["content"] if c["type"] == "image"]
    assert len(images) == 6
    assert {png_size(image["source"]["data"]) for image in images} == {(1280, 800)}
    (cursor,) = [c["text"] for r in results for c in r["content"] if c["type"] == "text"]
    assert cursor == "X=640,Y=600"
    assert messages[-1]["content"][0]["text"].startswith("The form is filled")
    assert box.page.evaluate("document.title") == "sent: Ada Lovelace"
    assert settled(box, "window.scrollY") > 0


def test_the_openai_loop_replays_its_conversation(shared_box: Box) -> None:
    box = shared_box
    box.open(FORM)
    box.page.evaluate(
        "window.seen = []; for (const kind of ['keydown', 'dblclick', 'mousemove'])"
        " addEventListener(kind, (e) => seen.push(kind + ':' + (e.key || e.detail)))"
    )
    before = len(acted(box))
    openai = example("computer_use_openai.py")
    model = openai.replay(FIXTURES / "openai_conversation.json")
    items = openai.run(box, "Fill the form with the name Grace", model)
    assert acted(box)[before:] == [
        "click", "type", "press", "move", "double_click", "scroll", "wait", "press", "path",
    ]  # fmt: skip
    outputs = [i["output"] for i in items if i.get("type") == "computer_call_output"]
    assert len(outputs) == 10
    for output in outputs:
        assert output["type"] == "computer_screenshot"
        assert png_size(output["image_url"].removeprefix("data:image/png;base64,")) == (1280, 800)
    assert items[-1]["type"] == "message"
    # Enter was pressed after the name was typed; the double click on Send sent it.
    assert box.page.evaluate("document.title") == "sent: Grace Hopper"
    seen = box.page.evaluate("window.seen")
    assert "keydown:Enter" in seen and "dblclick:2" in seen
    # ctrl+Home came last of the keys, after a scroll of 300 pixels.
    keys = [event for event in seen if event.startswith("keydown:")]
    assert keys[-2:] == ["keydown:Control", "keydown:Home"] and "mousemove:0" in seen
    assert settled(box, "window.scrollY", lambda y: y == 0) == 0
