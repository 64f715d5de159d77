"""Anthropic's computer-use tool driving a holm box: the agent loop a user writes.

    pip install anthropic            # for a live run; a replay needs nothing
    export ANTHROPIC_API_KEY=…  HOLM_SERVER_URL=http://127.0.0.1:8080  HOLM_SERVER_TOKEN=…
    python examples/computer_use_anthropic.py "Fill the form with the name Ada" https://…
    python examples/computer_use_anthropic.py --replay examples/fixtures/anthropic_conversation.json

Claude answers with `tool_use` blocks of its `computer` tool (`computer_20250124`); each
`input` is one action (`left_click`, `type`, `key`, `scroll`, …). `act` sends it as it is
to the box (`POST /v1/boxes/{id}/screens/0/computer/anthropic`), which does it as holm's
own actions and answers the `tool_result` Claude's next turn needs: the screen as a PNG.
The model is told the box's own size, so no coordinate is scaled. Every action is in the
box's trace, and a fork of the box does it again.

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

# A model's next response (the Messages API's JSON) to the conversation so far.
Model = Callable[[list[dict[str, Any]]], dict[str, Any]]
MODEL = "claude-sonnet-4-5"


def act(box: Box, step: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """Do one `computer` tool input on the box, as the model wrote it; the `tool_result`
    content to answer it with (the screen as a PNG, or the cursor's place), and whether
    the action failed (then the content says why)."""
    result = box.client.computer_anthropic(box.id, step)
    content: list[dict[str, Any]] = msgspec.to_builtins(result.content)
    return content, result.is_error


def run(box: Box, task: str, model: Model, turns: int = 30) -> list[dict[str, Any]]:
    """The agent loop: the model's turns until it stops asking for the computer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for _ in range(turns):
        response = model(messages)
        messages.append({"role": "assistant", "content": response["content"]})
        results = []
        for block in response["content"]:
            if block["type"] == "tool_use" and block["name"] == "computer":
                # A failed action is answered too: the model reads what went wrong.
                content, error = act(box, block["input"])
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
