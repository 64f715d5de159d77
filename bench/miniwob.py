"""Fork fidelity on a benchmark nobody here wrote: MiniWoB++ tasks solved through holm's
page operations by meaning, each run forked k times, the reward computed by the page.

    .venv/bin/pip install --no-deps miniwob     # its task pages only (MIT); not a dependency
    .venv/bin/python bench/miniwob.py [--forks 2] [--tasks click-button,enter-text,…]

One holmd in its own process (bench/http_api.py's `served`: the local runtime, the durable
local store). For each task, a new box opens the task's page from the `miniwob` package
(the box sees this interpreter's site-packages read-only, at /opt/holm/site), seeds the
page's random numbers and starts an episode (`evaluate`, in a batch, so it is recorded and
a fork does it again), reads the instruction, and a small scripted policy answers it with
`on_page` operations by meaning (`click`, `fill`, `check`, `choose`, `focus`) in a second
batch. The page scores the episode (`WOB_RAW_REWARD_GLOBAL`: 1 solved, -1 wrong or timed
out, 0 not ended), read with the page route (not recorded). Then the box is forked
`--forks` times (`POST …/fork`, one at a time) and each fork's page is scored the same way.

Printed per task: the instruction, the reward of the source and of each fork, the time of
the run and of each fork, and whether every fork scored what its source scored. Asserts
nothing; removes every box it made.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from http_api import CONFIRM, served
from lean_http import LeanHttp

# Where the box sees this interpreter's first site-packages folder (adapters/local/sandbox.py).
BOX_SITE = "/opt/holm/site"
SEED = "holm-miniwob"

Step = dict[str, Any]


def on_page(op: str, **what: Any) -> Step:
    return {"type": "on_page", "what": {"op": op, **what}, "settle_ms": 50}


def quoted(utterance: str) -> list[str]:
    return re.findall(r'"([^"]*)"', utterance)


def click_button(u: str) -> list[Step]:
    # 'Click on the "ok" button.'
    return [on_page("click", query=f"button {quoted(u)[0]}")]


def click_link(u: str) -> list[Step]:
    # 'Click on the link "lorem."': the link's text, which may end with the sentence's stop.
    return [on_page("click", query=quoted(u)[0], exact=True)]


def enter_text(u: str) -> list[Step]:
    # 'Enter "Ronda" into the text field and press Submit.'
    return [on_page("fill", query="input", text=quoted(u)[0]), on_page("click", query="Submit")]


def enter_password(u: str) -> list[Step]:
    # 'Enter the password "vw" into both text fields and press submit.'
    secret = quoted(u)[0]
    return [
        on_page("fill", query="#password", text=secret),
        on_page("fill", query="#verify", text=secret),
        on_page("click", query="Submit"),
    ]


def login_user(u: str) -> list[Step]:
    # 'Enter the username "kanesha" and the password "hz" into the text fields and press login.'
    user, password = quoted(u)[:2]
    return [
        on_page("fill", query="#username", text=user),
        on_page("fill", query="#password", text=password),
        on_page("click", query="Login"),
    ]


def focus_text(_: str) -> list[Step]:
    # 'Focus into the textbox.'
    return [on_page("focus", query="input")]


def click_checkboxes(u: str) -> list[Step]:
    # 'Select aBc, Xyz and click Submit.' (or 'Select nothing and click Submit.')
    names = re.match(r"Select (.*) and click Submit", u)
    wanted = [] if names is None or names[1] == "nothing" else re.split(r", ", names[1])
    return [
        *(on_page("check", query=name, exact=True) for name in wanted),
        on_page("click", query="Submit"),
    ]


def click_option(u: str) -> list[Step]:
    # 'Select Abc and click Submit.'
    name = re.match(r"Select (.*) and click Submit", u)
    assert name is not None, u
    return [on_page("check", query=name[1], exact=True), on_page("click", query="Submit")]


def choose_list(u: str) -> list[Step]:
    # 'Select Hammond from the list and click Submit.'
    name = re.match(r"Select (.*) from the list and click Submit", u)
    assert name is not None, u
    return [on_page("choose", query="select", options=[name[1]]), on_page("click", query="Submit")]


def click_dialog(_: str) -> list[Step]:
    # 'Close the dialog box by clicking the "x".'
    return [on_page("click", query="button Close")]


def click_tab(u: str) -> list[Step]:
    # 'Click on Tab #2.'
    number = re.search(r"#(\d+)", u)
    assert number is not None, u
    return [on_page("click", query=f"Tab #{number[1]}", exact=True)]


def enter_date(u: str) -> list[Step]:
    # 'Enter 03/17/2016 as the date and hit submit.': an <input type=date>, filled as a
    # person's browser takes it (its value is YYYY-MM-DD).
    date = re.search(r"(\d\d)/(\d\d)/(\d{4})", u)
    assert date is not None, u
    iso = f"{date[3]}-{date[1]}-{date[2]}"
    return [on_page("fill", query="#tt", text=iso), on_page("click", query="Submit")]


POLICIES: dict[str, Callable[[str], list[Step]]] = {
    "click-button": click_button,
    "click-link": click_link,
    "enter-text": enter_text,
    "enter-password": enter_password,
    "login-user": login_user,
    "focus-text": focus_text,
    "click-checkboxes": click_checkboxes,
    "click-option": click_option,
    "choose-list": choose_list,
    "click-dialog": click_dialog,
    "click-tab": click_tab,
    "enter-date": enter_date,
}


# The box sees the server's first site-packages folder at BOX_SITE (the same interpreter).
SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])


def box_url(task: str) -> str:
    """The task's page of the `miniwob` package as the box sees it. Found by path, not
    imported: its module needs gymnasium, and this script's own name is `miniwob`."""
    folder = SITE_PACKAGES / "miniwob" / "html" / "miniwob"
    if not (folder / f"{task}.html").is_file():
        sys.exit(f"bench/miniwob.py: no {task}.html; `.venv/bin/pip install --no-deps miniwob`")
    return f"file://{BOX_SITE}/{folder.relative_to(SITE_PACKAGES)}/{task}.html"


class Holm:
    def __init__(self, base: str) -> None:
        self.http = LeanHttp(base)

    def call(
        self, method: str, path: str, body: Any = None, extra: dict[str, str] | None = None
    ) -> Any:
        status, answer = self.http.request(method, path, body, extra)
        value = json.loads(answer) if answer else None
        if status != 200:
            raise RuntimeError(f"{method} {path}: {status} {value}")
        return value

    def batch(self, box: str, steps: list[Step]) -> list[Any]:
        answer = self.call("POST", f"/v1/boxes/{box}/screens/0/actions", {"actions": steps})
        for result in answer["results"]:
            if not result["ok"]:
                raise RuntimeError(f"step {result['index']} ({result['type']}): {result['error']}")
        return [result.get("value") for result in answer["results"]]

    def reward(self, box: str) -> float:
        what = {"expression": "WOB_RAW_REWARD_GLOBAL"}
        return float(self.call("POST", f"/v1/boxes/{box}/page/evaluate", what)["value"])


def run_task(holm: Holm, task: str, url: str, forks: int) -> dict[str, Any]:
    began = time.monotonic()
    box = holm.call("POST", "/v1/boxes", {})["id"]
    made = [box]
    try:
        seed = json.dumps(SEED + task)
        start = f"Math.seedrandom({seed}); core.startEpisodeReal(); core.getUtterance()"
        values = holm.batch(
            box,
            [{"type": "open_url", "url": url}, {"type": "evaluate", "what": {"expression": start}}],
        )
        utterance = str(values[1]["value"])
        try:
            holm.batch(box, POLICIES[task](utterance))
        except RuntimeError as exc:
            print(f"  {task}: the policy's step failed: {exc}")
        source = holm.reward(box)
        took = time.monotonic() - began
        branches: list[tuple[float, float]] = []
        for _ in range(forks):
            fork_began = time.monotonic()
            fork = holm.call("POST", f"/v1/boxes/{box}/fork", {})["box"]["id"]
            made.append(fork)
            branches.append((holm.reward(fork), time.monotonic() - fork_began))
        return {"utterance": utterance, "source": source, "took": took, "branches": branches}
    finally:
        for each in made:
            holm.call("DELETE", f"/v1/boxes/{each}", extra=CONFIRM)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--forks", type=int, default=2)
    parser.add_argument("--tasks", default=",".join(POLICIES))
    args = parser.parse_args()
    tasks = [t for t in args.tasks.split(",") if t]
    agree = 0
    with served("holm-bench-miniwob-", ["--chromium"]) as (base, _, _pid):
        holm = Holm(base)
        for task in tasks:
            got = run_task(holm, task, box_url(task), args.forks)
            rewards = [r for r, _ in got["branches"]]
            same = all(r == got["source"] for r in rewards)
            agree += same
            fork_times = ", ".join(f"{t:.1f}" for _, t in got["branches"])
            scores = " ".join(f"{r:+.0f}" for r in rewards)
            print(
                f"{task:18} source {got['source']:+.0f}  forks {scores}"
                f"  {'agree' if same else 'DIFFER'}   run {got['took']:.1f} s, forks {fork_times} s"
                f"   {got['utterance']!r}"
            )
    print(f"{agree} of {len(tasks)} tasks: every fork scored what its source scored")


if __name__ == "__main__":
    main()
