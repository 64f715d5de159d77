"""OpenAI's computer-use tool driving a holm box: the agent loop a user writes.

    pip install openai               # for a live run; a replay needs nothing
    export OPENAI_API_KEY=…  HOLM_SERVER_URL=http://127.0.0.1:8080  HOLM_SERVER_TOKEN=…
    python examples/computer_use_openai.py "Fill the form with the name Grace" https://…
    python examples/computer_use_openai.py --replay examples/fixtures/openai_conversation.json

The model (`computer-use-preview`, through the Responses API) answers with
`computer_call` items; each `action` is one of `click`, `double_click`, `drag` (a `path`),
`keypress`, `move`, `scroll` (in pixels), `type`, `wait`, `screenshot`. `act` sends it as
it is to the box (`POST /v1/boxes/{id}/screens/0/computer/openai`), which does it as
holm's own actions and answers the `computer_call_output` the next request needs: the
screen as a PNG. The model is told the box's own size, so no coordinate is scaled.

`--replay` runs the same loop on a recorded conversation (the API's responses, kept in a
JSON file) instead of calling the model: that is how CI tests this file, with no key.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from holm import Box

# A model's next response (the Responses API's JSON) to the items given so far.
Model = Callable[[list[dict[str, Any]]], dict[str, Any]]
MODEL = "computer-use-preview"


def act(box: Box, action: dict[str, Any]) -> dict[str, Any]:
    """Do one `computer_call` action on the box, as the model wrote it; the output to
    answer it with (the screen as a PNG, also when the action failed)."""
    output: dict[str, Any] = msgspec.to_builtins(box.client.computer_openai(box.id, action).output)
    return output


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
