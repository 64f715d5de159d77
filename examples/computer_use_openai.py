"""OpenAI's computer-use tool driving a holm box: the agent loop a user writes.

    pip install openai               # for a live run; a replay needs nothing
    export OPENAI_API_KEY=…  HOLM_SERVER_URL=http://127.0.0.1:8080  HOLM_SERVER_TOKEN=…
    python examples/computer_use_openai.py "Fill the form with the name Grace" https://…
    python examples/computer_use_openai.py --replay examples/fixtures/openai_conversation.json

The model (`computer-use-preview`, through the Responses API) answers with
`computer_call` items; each `action` is one of `click`, `double_click`, `drag` (a `path`),
`keypress`, `move`, `scroll` (in pixels), `type`, `wait`, `screenshot`. `act` maps it onto
holm actions, which run as one batch (`POST /v1/boxes/{id}/screens/0/actions`, through
`holm.Box`), and answers the `computer_call_output` the next request needs: the screen as
a PNG. The model is told the box's own size, so no coordinate is scaled. holm scrolls by
wheel notches: a scroll of N pixels is N/120 notches, rounded, at least one.

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
from holm.wire.values import Point

# A model's next response (the Responses API's JSON) to the items given so far.
Model = Callable[[list[dict[str, Any]]], dict[str, Any]]
MODEL = "computer-use-preview"
# The pixels of one wheel notch (holm scrolls by notches, Chromium 120 pixels each at most).
NOTCH_PX = 120
WAIT_MS = 1000


def key_of(name: str) -> str:
    """OpenAI's key names (`CTRL`, `ENTER`, `ArrowLeft`) as holm's (case does not matter
    to holm; `ArrowLeft` is its `left`)."""
    lower = name.lower()
    return lower.removeprefix("arrow") if lower.startswith("arrow") else lower


def notches(pixels: int) -> int:
    if pixels == 0:
        return 0
    return max(1, round(abs(pixels) / NOTCH_PX)) * (1 if pixels > 0 else -1)


def actions_of(action: dict[str, Any]) -> list[a.Action]:
    """One `computer_call` action as holm actions (none for a screenshot)."""
    kind = action["type"]
    at = Point(x=round(action["x"]), y=round(action["y"])) if "x" in action else None
    match kind:
        case "screenshot":
            return []
        case "click":
            button = action.get("button", "left")
            if button in ("back", "forward"):
                return [a.Press(chord=["alt", "left" if button == "back" else "right"])]
            if button == "wheel":
                button = "middle"
            return [a.Click(at=at, button=button)]
        case "double_click":
            return [a.DoubleClick(at=at)]
        case "move":
            return [a.Move(to=at)] if at else []
        case "drag":
            through = [Point(x=round(p["x"]), y=round(p["y"])) for p in action["path"]]
            return [a.Path(through=through)]
        case "keypress":
            return [a.Press(chord=[key_of(key) for key in action["keys"]])]
        case "type":
            return [a.Type(text=action["text"])]
        case "scroll":
            dx, dy = notches(action.get("scroll_x", 0)), notches(action.get("scroll_y", 0))
            return [a.Scroll(at=at, dx=dx, dy=dy)]
        case "wait":
            return [a.Wait(ms=WAIT_MS)]
    raise ValueError(f"this loop does not map the action {kind!r}")


def act(box: Box, action: dict[str, Any]) -> dict[str, Any]:
    """Do one `computer_call` action on the box; the output to answer it with."""
    actions = actions_of(action)
    if actions:
        box.act(*actions)
    png = base64.b64encode(box.screenshot()).decode()
    return {"type": "input_image", "image_url": f"data:image/png;base64,{png}"}


def run(box: Box, task: str, model: Model, turns: int = 30) -> list[dict[str, Any]]:
    """The agent loop: the model's turns until it asks for no more computer calls. Each
    request sends only the new items (the API keeps the rest with `previous_response_id`)."""
    items: list[dict[str, Any]] = [{"role": "user", "content": task}]
    given = list(items)
    for _ in range(turns):
        response = model(given)
        items += response["output"]
        given = []
        for item in response["output"]:
            if item["type"] == "computer_call":
                given.append(
                    {
                        "type": "computer_call_output",
                        "call_id": item["call_id"],
                        # The safety checks a person acknowledged; none here.
                        "acknowledged_safety_checks": item.get("pending_safety_checks", []),
                        "output": act(box, item["action"]),
                    }
                )
        if not given:
            break
        items += given
    return items


def replay(path: Path) -> Model:
    """The responses of a recorded conversation, in order, whatever was sent."""
    responses: Iterator[dict[str, Any]] = iter(json.loads(path.read_text())["responses"])
    return lambda items: next(responses)


def live(box: Box) -> Model:
    import openai  # a live run only

    client = openai.OpenAI()
    tool = {
        "type": "computer_use_preview",
        "display_width": box.view.width,
        "display_height": box.view.height,
        "environment": "linux",
    }
    last: list[str] = []

    def ask(items: list[dict[str, Any]]) -> dict[str, Any]:
        response = client.responses.create(
            model=MODEL,
            tools=[tool],
            input=items,
            truncation="auto",
            previous_response_id=last[-1] if last else None,
        )
        last.append(response.id)
        answer: dict[str, Any] = response.model_dump(mode="json", exclude_none=True)
        return answer

    return ask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "task", nargs="?", default="Fill the form with the name Grace, and send it."
    )
    parser.add_argument("url", nargs="?", default="https://example.com")
    parser.add_argument("--replay", type=Path, help="a recorded conversation instead of the model")
    args = parser.parse_args()
    with Box.create() as box:
        box.open(args.url)
        model = replay(args.replay) if args.replay else live(box)
        for item in run(box, args.task, model):
            if item.get("type") == "message":
                for part in item["content"]:
                    print(f"assistant: {part.get('text', '')}", file=sys.stderr)


if __name__ == "__main__":
    main()
