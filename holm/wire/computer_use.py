"""The computer-use formats of models, as `POST …/screens/{s}/computer/anthropic` and
`…/computer/openai` take them: one action object exactly as the model's tool call holds it
(Anthropic's `computer` tool, `computer_20250124` and `computer_20251124`; OpenAI's
`computer_use_preview` / `computer` tool), and the answer the model's next message needs.

The server does each as holm's own actions (holm/http/computer_use.py says which), so the
trace records those, and a fork does them again.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from holm.wire.api import ErrorBody, StepResult
from holm.wire.values import ImageFormat, Quality, encoding_of

# Coordinates as a model writes them: numbers in the size it was told the screen is, maybe
# with a fraction (rounded in one place: holm/http/computer_use.py, `Scaler`).
Number = float
Pair = tuple[Number, Number]


class _Model(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    pass


# Anthropic


AnthropicKind = Literal[
    "key",
    "hold_key",
    "type",
    "cursor_position",
    "mouse_move",
    "left_mouse_down",
    "left_mouse_up",
    "left_click",
    "left_click_drag",
    "right_click",
    "middle_click",
    "double_click",
    "triple_click",
    "scroll",
    "wait",
    "screenshot",
    "zoom",
]


class AnthropicAction(_Model):
    """A `computer` tool call's `input`. `text` is the keys of `key` and `hold_key`
    (xdotool's names: `ctrl+shift+t`, `Return`, `KP_0`), the text of `type`, and the
    modifiers held through a click or a scroll (`shift`, `ctrl+alt`); `duration` is in
    seconds; `scroll_amount` in wheel notches; `region` is `[x0, y0, x1, y1]`."""

    action: AnthropicKind
    coordinate: Pair | None = None
    start_coordinate: Pair | None = None
    text: str | None = None
    duration: Annotated[float, Meta(ge=0)] | None = None
    scroll_direction: Literal["up", "down", "left", "right"] | None = None
    scroll_amount: Annotated[int, Meta(ge=0)] | None = None
    region: tuple[Number, Number, Number, Number] | None = None


class ImageSource(msgspec.Struct, kw_only=True):
    type: Literal["base64"] = "base64"
    media_type: str
    data: str


class ImageBlock(msgspec.Struct, tag_field="type", tag="image", kw_only=True):
    source: ImageSource


class TextBlock(msgspec.Struct, tag_field="type", tag="text", kw_only=True):
    text: str


class AnthropicResult(msgspec.Struct, omit_defaults=True, kw_only=True):
    """`content` is a `tool_result` block's content as it is (`is_error` too: a step that
    failed says why in a text block). `steps` are holm's actions as they ran; the
    screenshot is `display_width` × `display_height`, the size the model was told."""

    content: list[ImageBlock | TextBlock]
    is_error: bool = False
    display_width: int
    display_height: int
    steps: list[StepResult] = msgspec.field(default_factory=list)


# OpenAI


class XY(_Model):
    x: Number
    y: Number


OpenAIButton = Literal["left", "right", "wheel", "back", "forward"]


class _OpenAI(_Model, tag_field="type"):
    pass


class OpenAIClick(_OpenAI, tag="click"):
    x: Number
    y: Number
    button: OpenAIButton = "left"
    keys: list[str] | None = None


class OpenAIDoubleClick(_OpenAI, tag="double_click"):
    x: Number
    y: Number
    button: OpenAIButton = "left"
    keys: list[str] | None = None


class OpenAIDrag(_OpenAI, tag="drag"):
    path: Annotated[list[XY], Meta(min_length=2)]
    keys: list[str] | None = None


class OpenAIKeypress(_OpenAI, tag="keypress"):
    """`keys` pressed together (`["CTRL", "L"]`)."""

    keys: Annotated[list[str], Meta(min_length=1)]


class OpenAIMove(_OpenAI, tag="move"):
    x: Number
    y: Number
    keys: list[str] | None = None


class OpenAIScreenshot(_OpenAI, tag="screenshot"):
    pass


class OpenAIScroll(_OpenAI, tag="scroll"):
    """`scroll_x`/`scroll_y` in pixels (positive: right, down)."""

    x: Number
    y: Number
    scroll_x: int = 0
    scroll_y: int = 0
    keys: list[str] | None = None


class OpenAIType(_OpenAI, tag="type"):
    text: str


class OpenAIWait(_OpenAI, tag="wait"):
    pass


OpenAIAction = (
    OpenAIClick
    | OpenAIDoubleClick
    | OpenAIDrag
    | OpenAIKeypress
    | OpenAIMove
    | OpenAIScreenshot
    | OpenAIScroll
    | OpenAIType
    | OpenAIWait
)


class OpenAIActions(_Model):
    """A `computer_call` that holds several `actions` (OpenAI's newer computer tool): done
    in turn as one batch, with one screenshot after them all."""

    actions: Annotated[list[OpenAIAction], Meta(min_length=1)]


class ComputerScreenshot(msgspec.Struct, kw_only=True):
    """A `computer_call_output`'s `output` as it is."""

    type: Literal["computer_screenshot"] = "computer_screenshot"
    image_url: str


class OpenAIResult(msgspec.Struct, omit_defaults=True, kw_only=True):
    """`output` goes into the `computer_call_output` as it is; `error` is set when a step
    failed (the screenshot shows the screen all the same)."""

    output: ComputerScreenshot
    error: ErrorBody | None = None
    display_width: int
    display_height: int
    steps: list[StepResult] = msgspec.field(default_factory=list)


class ComputerQuery(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    """How the model sees the screen: `display_width` × `display_height` is the size it
    was told (default: the screen's), its coordinates are in that size and the screenshot
    comes at that size; `format` and `quality` are the screenshot's; `settle_ms` waits that
    long after the steps before the screenshot (a page still drawing what a click did)."""

    display_width: Annotated[int, Meta(ge=1, le=16384)] | None = None
    display_height: Annotated[int, Meta(ge=1, le=16384)] | None = None
    format: Literal["png", "jpeg"] = "png"
    quality: Quality | None = None
    settle_ms: Annotated[int, Meta(ge=0, le=30_000)] = 0

    def __post_init__(self) -> None:
        # A quality with png is refused here (a 400 before any step), not ignored.
        encoding_of(self.format, self.quality)


SCREENSHOT_FORMATS: dict[ImageFormat, str] = {"png": "image/png", "jpeg": "image/jpeg"}

__all__ = [
    "SCREENSHOT_FORMATS",
    "AnthropicAction",
    "AnthropicResult",
    "ComputerQuery",
    "ComputerScreenshot",
    "ImageBlock",
    "ImageSource",
    "OpenAIAction",
    "OpenAIActions",
    "OpenAIResult",
    "TextBlock",
]
