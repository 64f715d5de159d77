"""What each computer-use action of a model becomes among holm's actions, and the one place
a model's coordinates are scaled and rounded, without a box (test_computer_use.py drives
a real one)."""

from __future__ import annotations

import msgspec
import pytest

from holm.errors import BadRequest
from holm.http.computer_use import Scaler, anthropic_steps, modifiers, openai_steps
from holm.wire import actions as a
from holm.wire import computer_use as cu
from holm.wire.values import Point, Region

# A 1280×800 screen, told to the model as 1024×640.
SCALE = Scaler(1280, 800, 1024, 640)


def test_coordinates_scale_round_half_up_and_stay_on_the_screen() -> None:
    assert SCALE.point((512.4, 320.0)) == Point(x=641, y=400)  # 640.5 rounds up
    assert SCALE.point((512.3, 319.5)) == Point(x=640, y=399)
    assert SCALE.point((-5, 9999)) == Point(x=0, y=799)
    assert SCALE.back(Point(x=641, y=400)) == (513, 320)
    assert SCALE.region((0, 0, 512, 320)) == Region(x=0, y=0, width=640, height=400)
    # 80 % gives 1024×640 exactly: the box scales the screenshot; 1000×600 needs a resize.
    assert SCALE.scale == 80 and Scaler(1280, 800, 1000, 600).scale is None
    with pytest.raises(BadRequest, match="zoom"):
        SCALE.region((10, 10, 10, 50))


def test_modifiers_by_any_name() -> None:
    assert modifiers(["CTRL+shift", "cmd", "Super_R", "option"]) == [
        "ctrl",
        "shift",
        "super",
        "alt",
    ]
    with pytest.raises(BadRequest, match="no modifier"):
        modifiers(["q"])


def _anthropic(**fields: object) -> tuple[list[a.Action], str]:
    return anthropic_steps(msgspec.convert(fields, cu.AnthropicAction), SCALE)


def test_each_anthropic_action_becomes_holm_actions() -> None:
    at = Point(x=125, y=250)
    xy = [100, 200]
    assert _anthropic(action="screenshot") == ([], "screenshot")
    assert _anthropic(action="cursor_position") == ([], "cursor")
    assert _anthropic(action="key", text="ctrl+a Return") == (
        [a.Press(then=["ctrl+a", "Return"])],
        "screenshot",
    )
    assert _anthropic(action="hold_key", text="shift", duration=2)[0] == [
        a.KeyDown(key="shift", hold_ms=3000),
        a.Wait(ms=2000),
        a.KeyUp(key="shift"),
    ]
    assert _anthropic(action="type", text="Hi")[0] == [a.Type(text="Hi")]
    assert _anthropic(action="mouse_move", coordinate=xy)[0] == [a.Move(to=at)]
    assert _anthropic(action="left_click", coordinate=xy, text="shift")[0] == [
        a.Click(at=at, held=["shift"])
    ]
    assert _anthropic(action="right_click")[0] == [a.Click(button="right")]
    assert _anthropic(action="middle_click", coordinate=xy)[0] == [a.Click(at=at, button="middle")]
    assert _anthropic(action="double_click", coordinate=xy, text="ctrl")[0] == [
        a.DoubleClick(at=at, held=["ctrl"])
    ]
    assert _anthropic(action="triple_click", coordinate=xy)[0] == [a.Click(at=at, count=3)]
    assert _anthropic(action="left_click_drag", start_coordinate=[0, 0], coordinate=xy)[0] == [
        a.Drag(from_=Point(x=0, y=0), to=at)
    ]
    assert _anthropic(action="left_mouse_down")[0] == [a.MouseDown(hold_ms=a.MAX_HOLD_MS)]
    assert _anthropic(action="left_mouse_up")[0] == [a.MouseUp()]
    assert _anthropic(
        action="scroll", coordinate=xy, scroll_direction="left", scroll_amount=3, text="shift"
    )[0] == [a.Scroll(at=at, dx=-3, held=["shift"])]
    assert _anthropic(action="wait", duration=0.5)[0] == [a.Wait(ms=500)]
    assert _anthropic(action="zoom", region=[0, 0, 10, 10]) == ([], "zoom")
    for bad in (
        {"action": "mouse_move"},
        {"action": "wait", "duration": 31},
        {"action": "scroll", "scroll_direction": "up", "scroll_amount": 101},
        {"action": "key"},
    ):
        with pytest.raises(BadRequest):
            _anthropic(**bad)


def _openai(**fields: object) -> list[a.Action]:
    return openai_steps(msgspec.convert(fields, cu.OpenAIAction), SCALE)  # type: ignore[arg-type]


def test_each_openai_action_becomes_holm_actions() -> None:
    at = Point(x=125, y=250)
    assert _openai(type="click", x=100, y=200, button="wheel") == [a.Click(at=at, button="middle")]
    assert _openai(type="click", x=100, y=200, keys=["CTRL"]) == [a.Click(at=at, held=["ctrl"])]
    assert _openai(type="double_click", x=100, y=200) == [a.DoubleClick(at=at)]
    assert _openai(type="drag", path=[{"x": 0, "y": 0}, {"x": 100, "y": 200}]) == [
        a.Path(through=[Point(x=0, y=0), at])
    ]
    assert _openai(type="keypress", keys=["CTRL", "L"]) == [a.Press(chord=["CTRL", "L"])]
    assert _openai(type="move", x=100, y=200) == [a.Move(to=at)]
    # The model's 40 pixels are 50 of the screen's.
    assert _openai(type="scroll", x=100, y=200, scroll_y=40) == [a.Scroll(at=at, dy_px=50)]
    assert _openai(type="scroll", x=100, y=200) == [a.Move(to=at)]
    assert _openai(type="type", text="x") == [a.Type(text="x")]
    assert _openai(type="wait") == [a.Wait(ms=1000)]
    assert _openai(type="screenshot") == []
