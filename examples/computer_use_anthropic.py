"""Anthropic's computer-use tool driving a holm box: the agent loop a user writes.

    pip install anthropic            # for a live run; a replay needs nothing
    export ANTHROPIC_API_KEY=…  HOLM_SERVER_URL=http://127.0.0.1:8080  HOLM_SERVER_TOKEN=…
    python examples/computer_use_anthropic.py "Fill the form with the name Ada" https://…
    python examples/computer_use_anthropic.py --replay examples/fixtures/anthropic_conversation.json

Claude answers with `tool_use` blocks of its `computer` tool (`computer_20250124`); each
`input` is one action (`left_click`, `type`, `key`, `scroll`, …). `act` maps it onto holm
actions, which run as one batch (`POST /v1/boxes/{id}/screens/0/actions`, through
`holm.Box`), and answers the `tool_result` Claude's next turn needs: the screen as a PNG.
The model is told the box's own size, so no coordinate is scaled. Every action is in the
box's trace, and a fork of the box does it again.

`--replay` runs the same loop on a recorded conversation (the API's responses, kept in a
JSON file) instead of calling the model: that is how CI tests this file, with no key.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from holm import Box
from holm.wire import actions as a
from holm.wire.values import Button, Modifier, Point

# A model's next response (the Messages API's JSON) to the conversation so far.
Model = Callable[[list[dict[str, Any]]], dict[str, Any]]
MODEL = "claude-sonnet-4-5"
BUTTONS: dict[str, Button] = {
    "left_click": "left",
    "right_click": "right",
    "middle_click": "middle",
}


def _at(value: list[int]) -> Point:
    return Point(x=round(value[0]), y=round(value[1]))


def modifiers(names: list[str]) -> list[Modifier]:
    """The keys Claude holds during a click (its `text`: `shift`, `ctrl+alt`…)."""
    known: dict[str, Modifier] = {"shift": "shift", "ctrl": "ctrl", "alt": "alt", "super": "super"}
    aliases = {"control": "ctrl", "cmd": "super", "meta": "super", "win": "super"}
    return [known[aliases.get(name.lower(), name.lower())] for name in names]


def actions_of(step: dict[str, Any]) -> list[a.Action]:
    """One `computer` tool input as holm actions (none for a screenshot)."""
    kind = step["action"]
    at = _at(step["coordinate"]) if "coordinate" in step else None
    held = [key for key in (step.get("text") or "").split("+") if key] if kind in BUTTONS else []
    match kind:
        case "screenshot":
            return []
        case "left_click" | "right_click" | "middle_click":
            return [a.Click(at=at, button=BUTTONS[kind], held=modifiers(held))]
        case "double_click":
            return [a.DoubleClick(at=at)]
        case "triple_click":
            return [a.Click(at=at), a.Click(), a.Click()]
        case "mouse_move":
            return [a.Move(to=at)] if at else []
        case "left_click_drag":
            return [a.Drag(from_=_at(step["start_coordinate"]), to=at)] if at else []
        case "left_mouse_down":
            # Held across the model's turns until its `left_mouse_up` (a minute at most).
            return [a.MouseDown(at=at, hold_ms=a.MAX_HOLD_MS)]
        case "left_mouse_up":
            return [a.MouseUp(at=at)]
        case "type":
            return [a.Type(text=step["text"])]
        case "key":
            return [a.Press(chord=step["text"])]
        case "hold_key":
            ms = round(float(step["duration"]) * 1000)
            return [
                a.KeyDown(key=step["text"], hold_ms=ms),
                a.Wait(ms=ms),
                a.KeyUp(key=step["text"]),
            ]
        case "scroll":
            amount = int(step.get("scroll_amount", 3))
            dx, dy = {"up": (0, -amount), "down": (0, amount), "left": (-amount, 0)}.get(
                step.get("scroll_direction", "down"), (amount, 0)
            )
            return [a.Scroll(at=at, dx=dx, dy=dy)]
        case "wait":
            return [a.Wait(ms=round(float(step.get("duration", 1)) * 1000))]
        case "cursor_position":
            return [a.Cursor()]
    raise ValueError(f"this loop does not map the action {kind!r}")


def act(box: Box, step: dict[str, Any]) -> list[dict[str, Any]]:
    """Do one `computer` tool input on the box; the `tool_result` content to answer it."""
    actions = actions_of(step)
    results = box.act(*actions) if actions else []
    if step["action"] == "cursor_position":
        at = results[-1]
        return [{"type": "text", "text": f"X={at.x},Y={at.y}"}]
    png = base64.b64encode(box.screenshot()).decode()
    return [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}]


def run(box: Box, task: str, model: Model, turns: int = 30) -> list[dict[str, Any]]:
    """The agent loop: the model's turns until it stops asking for the computer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for _ in range(turns):
        response = model(messages)
        messages.append({"role": "assistant", "content": response["content"]})
        results = []
        for block in response["content"]:
            if block["type"] == "tool_use" and block["name"] == "computer":
                try:
                    content, error = act(box, block["input"]), False
                except Exception as exc:  # the model reads what went wrong, and goes on
                    content, error = [{"type": "text", "text": str(exc)}], True
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": block["id"],
                        "content": content,
                        "is_error": error,
                    }
                )
        if not results:
            break
        messages.append({"role": "user", "content": results})
    return messages


def replay(path: Path) -> Model:
    """The responses of a recorded conversation, in order, whatever was asked."""
    responses: Iterator[dict[str, Any]] = iter(json.loads(path.read_text())["responses"])
    return lambda messages: next(responses)


def live(box: Box) -> Model:
    import anthropic  # a live run only

    client = anthropic.Anthropic()
    tool = {
        "type": "computer_20250124",
        "name": "computer",
        "display_width_px": box.view.width,
        "display_height_px": box.view.height,
    }

    def ask(messages: list[dict[str, Any]]) -> dict[str, Any]:
        response = client.beta.messages.create(
            model=MODEL,
            max_tokens=1024,
            tools=[tool],
            messages=messages,
            betas=["computer-use-2025-01-24"],
        )
        answer: dict[str, Any] = response.model_dump(mode="json", exclude_none=True)
        return answer

    return ask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", nargs="?", default="Fill the form with the name Ada, and send it.")
    parser.add_argument("url", nargs="?", default="https://example.com")
    parser.add_argument("--replay", type=Path, help="a recorded conversation instead of the model")
    args = parser.parse_args()
    with Box.create() as box:
        box.open(args.url)
        model = replay(args.replay) if args.replay else live(box)
        for message in run(box, args.task, model):
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "text":
                    print(f"{message['role']}: {block['text']}", file=sys.stderr)


if __name__ == "__main__":
    main()
