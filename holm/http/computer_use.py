"""The computer-use formats of models (holm/wire/computer_use.py) done as holm's own
actions: each model action becomes a batch of holm actions on the screen (recorded as any
batch is, so a fork does them again), and the answer is what the model's next message needs,
the screenshot at the size the model was told.

Coordinates go both ways through `Scaler`, as Anthropic's computer-use docs recommend for a
screen larger than the model is told: the model's `(x, y)` in a `display_width` ×
`display_height` picture is `(x · width / display_width, y · height / display_height)` on
the screen, rounded half up to a whole pixel (the one place holm rounds a coordinate with a
fraction) and kept on the screen; a point read from the screen (the pointer) goes back the
other way.
"""

from __future__ import annotations

import asyncio
import base64
import io
import math
from dataclasses import dataclass
from typing import TypeVar

from PIL import Image

from holm.engine import Engine
from holm.errors import BadRequest
from holm.wire import actions as a
from holm.wire import computer_use as cu
from holm.wire.api import ActionsRequest, ActionsResult, ErrorBody, FrameView, StepResult
from holm.wire.keys import normalize_key, split_chord
from holm.wire.spec import Spec, canonical_spec
from holm.wire.values import Button, Encoding, Modifier, Point, Region, encoding_of

T = TypeVar("T")

# How long an Anthropic `left_mouse_down` holds the button when no `left_mouse_up` comes.
MOUSE_DOWN_HOLD_MS = a.MAX_HOLD_MS
# OpenAI's `wait` names no time: a second, as OpenAI's computer-use samples wait.
OPENAI_WAIT_MS = 1000

_MODIFIERS: dict[str, Modifier] = {
    "ctrl": "ctrl",
    "control": "ctrl",
    "shift": "shift",
    "alt": "alt",
    "option": "alt",
    "super": "super",
    "meta": "super",
    "cmd": "super",
    "command": "super",
    "win": "super",
    "windows": "super",
    "os": "super",
}
# X's own names (xdotool's), either side: `Control_L`, `Super_R`.
_X_MODIFIERS: tuple[tuple[str, Modifier], ...] = (
    ("control", "ctrl"),
    ("shift", "shift"),
    ("alt", "alt"),
    ("super", "super"),
    ("meta", "super"),
)
_MODIFIERS.update({f"{name}_{side}": held for name, held in _X_MODIFIERS for side in "lr"})
_HOLDING = frozenset(
    {
        "left_click",
        "right_click",
        "middle_click",
        "double_click",
        "triple_click",
        "left_click_drag",
        "scroll",
    }
)
_CLICKS: dict[str, Button] = {
    "left_click": "left",
    "right_click": "right",
    "middle_click": "middle",
}
_OPENAI_BUTTONS: dict[str, Button] = {
    "left": "left",
    "right": "right",
    "wheel": "middle",
    "back": "back",
    "forward": "forward",
}


@dataclass(frozen=True)
class Scaler:
    """The screen's size and the size the model was told it is."""

    width: int
    height: int
    display_width: int
    display_height: int

    def point(self, xy: cu.Pair) -> Point:
        x = _half_up(xy[0] * self.width / self.display_width)
        y = _half_up(xy[1] * self.height / self.display_height)
        return Point(x=min(max(x, 0), self.width - 1), y=min(max(y, 0), self.height - 1))

    def back(self, point: Point) -> tuple[int, int]:
        return (
            _half_up(point.x * self.display_width / self.width),
            _half_up(point.y * self.display_height / self.height),
        )

    def region(self, box: tuple[float, float, float, float]) -> Region:
        first, last = self.point(box[:2]), self.point(box[2:])
        left, top = min(first.x, last.x), min(first.y, last.y)
        width, height = abs(last.x - first.x), abs(last.y - first.y)
        if width < 1 or height < 1:
            raise BadRequest("zoom's region needs [x0, y0, x1, y1] with x1 > x0 and y1 > y0")
        return Region(x=left, y=top, width=width, height=height)

    @property
    def scale(self) -> int | None:
        """The frame scale (percent) that gives the display's size exactly, if one does."""
        percent = round(self.display_width * 100 / self.width)
        if not a.MIN_SCALE <= percent <= a.MAX_SCALE:
            return None
        exact = (self.width * percent // 100, self.height * percent // 100)
        return percent if exact == (self.display_width, self.display_height) else None


def _half_up(value: float) -> int:
    return math.floor(value + 0.5)


async def scaler_of(engine: Engine, box_id: str, query: cu.ComputerQuery) -> Scaler:
    state = await engine.box(box_id)
    desktop = canonical_spec(state.spec or Spec()).desktop
    width, height = desktop.width or 1, desktop.height or 1
    if (query.display_width is None) != (query.display_height is None):
        raise BadRequest("display_width and display_height go together")
    return Scaler(width, height, query.display_width or width, query.display_height or height)


def modifiers(names: list[str]) -> list[Modifier]:
    """Modifier keys by any of their names (`CTRL`, `cmd`, `shift+alt`)."""
    held: list[Modifier] = []
    for name in names:
        for part in split_chord(name):
            key = normalize_key(part).lower()
            if key not in _MODIFIERS:
                raise BadRequest(f"{part!r} is no modifier key (shift, ctrl, alt, super)")
            if _MODIFIERS[key] not in held:
                held.append(_MODIFIERS[key])
    return held


def _wait_ms(seconds: float | None, what: str) -> int:
    if seconds is None:
        raise BadRequest(f"{what} needs `duration` (seconds)")
    ms = round(seconds * 1000)
    if ms > a.MAX_WAIT_MS:
        raise BadRequest(f"{what}'s duration is at most {a.MAX_WAIT_MS // 1000} seconds")
    return ms


def needs(value: T | None, field: str, action: str) -> T:
    if value is None:
        raise BadRequest(f"{action} needs `{field}`")
    return value


# What an action answers besides its steps.
Reading = str  # "screenshot", "cursor", "zoom"


def anthropic_steps(act: cu.AnthropicAction, scale: Scaler) -> tuple[list[a.Action], Reading]:
    """The holm actions that do `act`, and what the answer reads after them."""
    at = None if act.coordinate is None else scale.point(act.coordinate)
    # On a click, a drag or a scroll, `text` names the keys held through it.
    held = modifiers([act.text]) if act.text and act.action in _HOLDING else []
    match act.action:
        case "screenshot":
            return [], "screenshot"
        case "cursor_position":
            return [], "cursor"
        case "zoom":
            return [], "zoom"
        case "key":
            keys = needs(act.text, "text", "key")
            return [a.Press(then=keys.split() or [keys])], "screenshot"
        case "hold_key":
            key = needs(act.text, "text", "hold_key")
            ms = _wait_ms(act.duration, "hold_key")
            hold = min(a.MAX_HOLD_MS, ms + 1000)
            return [a.KeyDown(key=key, hold_ms=hold), a.Wait(ms=ms), a.KeyUp(key=key)], "screenshot"
        case "type":
            return [a.Type(text=needs(act.text, "text", "type"))], "screenshot"
        case "mouse_move":
            return [a.Move(to=needs(at, "coordinate", "mouse_move"))], "screenshot"
        case "left_click" | "right_click" | "middle_click":
            button = _CLICKS[act.action]
            return [a.Click(at=at, button=button, held=held)], "screenshot"
        case "double_click":
            return [a.DoubleClick(at=at, held=held)], "screenshot"
        case "triple_click":
            return [a.Click(at=at, held=held, count=3)], "screenshot"
        case "left_click_drag":
            start = None if act.start_coordinate is None else scale.point(act.start_coordinate)
            to = needs(at, "coordinate", "left_click_drag")
            return [a.Drag(from_=start, to=to, held=held)], "screenshot"
        case "left_mouse_down":
            return [a.MouseDown(at=at, hold_ms=MOUSE_DOWN_HOLD_MS)], "screenshot"
        case "left_mouse_up":
            return [a.MouseUp(at=at)], "screenshot"
        case "scroll":
            way = needs(act.scroll_direction, "scroll_direction", "scroll")
            amount = act.scroll_amount if act.scroll_amount is not None else 1
            if not 1 <= amount <= a.MAX_SCROLL_NOTCHES:
                raise BadRequest(f"scroll_amount is 1 to {a.MAX_SCROLL_NOTCHES} notches")
            dx = {"left": -amount, "right": amount}.get(way, 0)
            dy = {"up": -amount, "down": amount}.get(way, 0)
            return [a.Scroll(at=at, dx=dx, dy=dy, held=held)], "screenshot"
        case "wait":
            return [a.Wait(ms=_wait_ms(act.duration, "wait"))], "screenshot"
    raise BadRequest(f"unknown action {act.action!r}")


def openai_steps(act: cu.OpenAIAction, scale: Scaler) -> list[a.Action]:
    """The holm actions that do `act` (every OpenAI action answers a screenshot)."""
    match act:
        case cu.OpenAIClick(x=x, y=y, button=button, keys=keys):
            at = scale.point((x, y))
            return [a.Click(at=at, button=_OPENAI_BUTTONS[button], held=modifiers(keys or []))]
        case cu.OpenAIDoubleClick(x=x, y=y, button=button, keys=keys):
            at = scale.point((x, y))
            held = modifiers(keys or [])
            return [a.DoubleClick(at=at, button=_OPENAI_BUTTONS[button], held=held)]
        case cu.OpenAIDrag(path=path, keys=keys):
            through = [scale.point((p.x, p.y)) for p in path]
            return [a.Path(through=through, held=modifiers(keys or []))]
        case cu.OpenAIKeypress(keys=keys):
            return [a.Press(chord=keys)]
        case cu.OpenAIMove(x=x, y=y, keys=keys):
            if keys:
                raise BadRequest("move holds no keys")
            return [a.Move(to=scale.point((x, y)))]
        case cu.OpenAIScroll(x=x, y=y, scroll_x=sx, scroll_y=sy, keys=keys):
            # The model's pixels are its picture's: the screen's are as many times more.
            px = _half_up(sx * scale.width / scale.display_width)
            py = _half_up(sy * scale.height / scale.display_height)
            at = scale.point((x, y))
            if px == 0 and py == 0:
                return [a.Move(to=at)]
            return [a.Scroll(at=at, dx_px=px, dy_px=py, held=modifiers(keys or []))]
        case cu.OpenAIType(text=text):
            return [a.Type(text=text)]
        case cu.OpenAIWait():
            return [a.Wait(ms=OPENAI_WAIT_MS)]
        case cu.OpenAIScreenshot():
            return []
    raise BadRequest(f"unknown action {type(act).__name__}")


@dataclass
class Answer:
    """What a model action came to: holm's steps, the screenshot (base64, its media type),
    the pointer (for cursor_position), the first failed step's error."""

    steps: list[StepResult]
    image: str | None = None
    media_type: str = "image/png"
    pointer: Point | None = None
    error: ErrorBody | None = None


async def run(
    engine: Engine,
    box_id: str,
    screen: int,
    steps: list[a.Action],
    reading: Reading,
    scale: Scaler,
    query: cu.ComputerQuery,
    zoom: Region | None = None,
) -> Answer:
    """Do `steps` as one batch (recorded), then read what the answer needs."""
    encoding = encoding_of(query.format, query.quality)
    media = cu.SCREENSHOT_FORMATS[encoding.format]
    percent = scale.scale
    if reading == "cursor":
        where = await engine.act(box_id, screen, a.Cursor())
        assert isinstance(where, Point)
        return Answer(steps=[], pointer=where)
    if reading == "zoom":
        frame = await engine.frame(box_id, screen, region=zoom, encoding=encoding)
        zoomed = base64.b64encode(frame.image or b"").decode()
        return Answer(steps=[], image=zoomed, media_type=media)
    if not steps:
        frame = await engine.frame(box_id, screen, scale=percent or 100, encoding=encoding)
        image = frame.image or b""
        if percent is None:
            image = await _resized(image, scale, encoding)
        return Answer(steps=[], image=base64.b64encode(image).decode(), media_type=media)
    batch = ActionsRequest(
        actions=steps,
        want=["frame"],
        settle_ms=query.settle_ms,
        frame_format=encoding.format,
        frame_quality=query.quality,
        frame_scale=percent or 100,
    )
    done = await engine.run_batch(box_id, screen, batch)
    data = _frame_data(done.frame)
    if percent is not None or data is None:
        return Answer(steps=done.results, image=data, media_type=media, error=_failed(done))
    image = await _resized(base64.b64decode(data), scale, encoding)
    resized = base64.b64encode(image).decode()
    return Answer(steps=done.results, image=resized, media_type=media, error=_failed(done))


def _frame_data(frame: FrameView | None) -> str | None:
    if frame is None:
        return None
    return frame.png_base64 if frame.format == "png" else frame.image_base64


def _failed(done: ActionsResult) -> ErrorBody | None:
    return next((step.error for step in done.results if not step.ok), None)


async def _resized(image: bytes, scale: Scaler, encoding: Encoding) -> bytes:
    """The screenshot at the display's size, where no frame scale gives it exactly."""

    def resize() -> bytes:
        picture = Image.open(io.BytesIO(image))
        size = (scale.display_width, scale.display_height)
        out = io.BytesIO()
        resized = picture.convert("RGB").resize(size, Image.Resampling.LANCZOS)
        if encoding.format == "png":
            resized.save(out, "PNG", compress_level=1)
        else:
            resized.save(out, "JPEG", quality=encoding.quality)
        return out.getvalue()

    return await asyncio.to_thread(resize)


def anthropic_result(answer: Answer, scale: Scaler) -> cu.AnthropicResult:
    content: list[cu.ImageBlock | cu.TextBlock] = []
    if answer.error is not None:
        content.append(cu.TextBlock(text=f"{answer.error.code}: {answer.error.message}"))
    if answer.pointer is not None:
        x, y = scale.back(answer.pointer)
        content.append(cu.TextBlock(text=f"X={x},Y={y}"))
    if answer.image is not None:
        source = cu.ImageSource(media_type=answer.media_type, data=answer.image)
        content.append(cu.ImageBlock(source=source))
    return cu.AnthropicResult(
        content=content,
        is_error=answer.error is not None,
        display_width=scale.display_width,
        display_height=scale.display_height,
        steps=answer.steps,
    )


def openai_result(answer: Answer, scale: Scaler) -> cu.OpenAIResult:
    url = f"data:{answer.media_type};base64,{answer.image or ''}"
    return cu.OpenAIResult(
        output=cu.ComputerScreenshot(image_url=url),
        error=answer.error,
        display_width=scale.display_width,
        display_height=scale.display_height,
        steps=answer.steps,
    )
