"""browser-use on a holm box: its agent drives the box's Chromium through the box's
DevTools relay, so it starts no browser of its own.

    bash scripts/setup          # makes examples/browser_use/.venv from requirements.txt
    CDP_URL=$(holm browser devtools BOX)   # POST /v1/boxes/{id}/cdp: needs no token
    cd examples/browser_use
    .venv/bin/python run.py "$CDP_URL" --task "Fill the form with the name Ada" \\
        --replay ../fixtures/browser_use_conversation.json

Without `--replay` it asks Anthropic's model (`ANTHROPIC_API_KEY`). With it, the model's
answers are those of a recorded run (`responses`, the JSON of browser-use's `AgentOutput`
each time): no model, no key. browser-use names a page's elements by an index that is the
element's DevTools node id, which differs from one page load to the next, so the replay
finds each element the model chose by the line the model saw it on (`elements`), in the
page as it is now. browser-use reads only http(s) pages (it skips `data:` and `file:`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

# Before browser-use is imported: it reads these at import.
os.environ.setdefault("ANONYMIZED_TELEMETRY", "false")
os.environ.setdefault("BROWSER_USE_CLOUD_SYNC", "false")

from browser_use import Agent, Browser
from browser_use.llm.views import ChatInvokeCompletion

ELEMENT = re.compile(r"\[(\d+)\](<[^\n]*)")


class Replay:
    """browser-use's chat model protocol (`ainvoke`), answering with a recorded run's
    responses in turn."""

    model = "replay"
    _verified_api_keys = True

    def __init__(self, recorded: dict[str, Any]) -> None:
        self.responses: list[dict[str, Any]] = recorded["responses"]
        self.elements: dict[str, str] = recorded["elements"]
        self.turn = 0

    @property
    def provider(self) -> str:
        return "replay"

    @property
    def name(self) -> str:
        return "replay"

    @property
    def model_name(self) -> str:
        return "replay"

    async def ainvoke(self, messages: list[Any], output_format: Any = None, **_: Any) -> Any:
        if output_format is None or self.turn >= len(self.responses):
            # browser-use's judge of the finished run, or a turn the recording lacks.
            raise RuntimeError(f"the recorded run has no answer for turn {self.turn + 1}")
        seen = {line: index for index, line in ELEMENT.findall(_text(messages[-1]))}
        response = json.loads(json.dumps(self.responses[self.turn]))
        self.turn += 1
        for action in response["action"]:
            for params in action.values():
                if isinstance(params, dict) and "index" in params:
                    line = self.elements[str(params["index"])]
                    if line not in seen:
                        raise RuntimeError(f"the page has no element {line}")
                    params["index"] = int(seen[line])
        return ChatInvokeCompletion(completion=output_format.model_validate(response), usage=None)


def _text(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "\n".join(getattr(part, "text", "") for part in content)


async def run(cdp_url: str, task: str, llm: Any, max_steps: int = 10) -> dict[str, Any]:
    """browser-use's agent on the box's browser at `cdp_url`; what it reported."""
    browser = Browser(cdp_url=cdp_url)
    agent = Agent(task=task, llm=llm, browser=browser, use_vision=False, use_judge=False)
    history = await agent.run(max_steps=max_steps)
    return {
        "done": history.is_done(),
        "success": history.is_successful(),
        "result": history.final_result(),
        "actions": [
            name
            for step in history.model_actions()
            for name in step
            if name != "interacted_element"
        ],
        "errors": [error for error in history.errors() if error],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cdp_url")
    parser.add_argument("--task", default="Fill the form with the name Ada")
    parser.add_argument("--replay", type=Path, help="a recorded run's model answers")
    args = parser.parse_args()
    if args.replay is not None:
        llm: Any = Replay(json.loads(args.replay.read_text()))
    else:
        from browser_use import ChatAnthropic

        llm = ChatAnthropic(model="claude-sonnet-4-5")
    print(json.dumps(asyncio.run(run(args.cdp_url, args.task, llm))))


if __name__ == "__main__":
    main()
