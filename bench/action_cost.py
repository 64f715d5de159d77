"""What one action costs each process of a box, by kind of action: the CPU that holmd, the
agent, each kind of Chromium process (and, with `--threads`, each kind of thread), the X
server and the box's other processes spend per action; prints figures, asserts nothing.

    .venv/bin/python bench/action_cost.py [--actions 300] [--rounds 2] [--threads]
        [--idle-seconds 5] [--against DIR] [--features F,…]

holmd runs in its own process (bench/http_api.py's `served`, the durable local store) with
one box of the default spec (1280×800, Chromium) on bench/host.py's page (a heading and a
field). Each kind of action is sent `--actions` times back to back on one keep-alive
connection (the lean client), `--rounds` times in turns with the other kinds:

- click: on a blank spot under the field, as host.py's clients click (the first moves
  the focus off the field; the others change nothing on the page), at one of two spots
  in turn: clicks back to back at one spot are a double and a triple click, which select
  the heading's text, and Chromium draws the selection;
- move: between two blank spots;
- type 3 letters: "abc", with the focus on the page's body (as host.py's clients type,
  after their click): nothing is drawn;
- frame, unchanged: `GET …/frame?have=` the hash just read;
- letter into the field: one letter typed into the focused field (the page opened again,
  so the field has the focus), a pause of PAINTED_MS for Chromium to draw it; the look
  before each step then finds the screen changed and the step's frame is recorded;
- letter + its PNG frame: the same, then `GET …/frame?have=` the last hash, which is a
  PNG of the new letter; the line after it is the difference of the two, what the PNG
  frame adds;
- host.py's loop: click, type 3 letters and an unchanged frame, per action (a click or
  a type), what host.py's CPU split divides by.

The CPU of each process (from /proc/PID/stat) is read before and after each series, with
a rest of SETTLE_S after its last action so that what it set off is done, less what the
process spends idle over that time (measured over `--idle-seconds` first), divided by the
number of actions. Threads come from /proc/PID/task/TID/schedstat (nanoseconds).

With `--against DIR` (a checkout of other code, e.g. `git -C /work/main archive HEAD |
tar -x -C DIR`), a second holmd runs that code with a box of its own, and every series is
sent to both in turns, so both columns are measured under the same load; only one box
acts at a time. `--features` gives both boxes the spec's features (the default spec's
when not given: `accessibility`, `dock`, `video`, `wide_fonts`); `--other-features` gives
the `--against` side's box others.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import box_memory
from http_api import CONFIRM, add_against, served
from lean_http import LeanHttp
from proc_cpu import cpu_by_process, cpu_by_thread

PAGE = "data:text/html,<title>box 0</title><h1>box 0</h1><input autofocus size=40>"
# Blank spots of the page, under the field (the page begins under Chromium's toolbar).
BLANK = ((600, 500), (640, 520))
# Long enough for Chromium to draw a letter typed, and for a series' last action's
# drawing to be over before its CPU is read.
PAINTED_MS = 60
SETTLE_S = 0.5
CORES_MS = (os.cpu_count() or 1) * 1000


class Side:
    """One holmd, its box and its processes."""

    def __init__(self, name: str, base: str, state_dir: Path, holmd: int) -> None:
        self.name = name
        self.holmd = holmd
        self.state_dir = state_dir
        self.http = LeanHttp(base)
        self.box = ""
        self.have = ""
        # CPU seconds a second spent idle, by process kind and by thread kind.
        self.idle: dict[str, float] = {}
        # Per kind of action: CPU ms an action, by process kind and by thread kind.
        self.spent: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        self.errors = 0

    def start(self, features: list[str] | None) -> None:
        desktop: dict[str, Any] = {} if features is None else {"features": features}
        status, body = self.http.request("POST", "/v1/boxes", {"spec": {"desktop": desktop}})
        assert status == 200, body
        self.box = json.loads(body)["id"]
        self.open_page()

    def open_page(self) -> None:
        self.act({"type": "open_url", "url": PAGE})
        time.sleep(1)
        self.have = self.frame("")["hash"]

    def act(self, *steps: dict[str, Any]) -> None:
        path = f"/v1/boxes/{self.box}/screens/0/actions"
        status, body = self.http.request("POST", path, {"actions": list(steps)})
        if status != 200:
            self.errors += 1
            print(f"  {self.name}: {status} {body[:200]!r}")

    def frame(self, have: str) -> dict[str, Any]:
        path = f"/v1/boxes/{self.box}/screens/0/frame" + (f"?have={have}" if have else "")
        status, body = self.http.request("GET", path)
        if status != 200:
            self.errors += 1
            return {}
        answer: dict[str, Any] = json.loads(body)
        return answer

    def pids(self) -> list[int]:
        return [self.holmd, *box_memory.box_pids(self.state_dir / "boxes", self.box)]

    def cpu_now(self) -> dict[str, float]:
        """CPU seconds so far, by process kind ("holmd", "agent (python)", "Chromium
        renderer", …) and by thread kind ("  Chromium browser: VizCompositorTh", …)."""
        spent: dict[str, float] = defaultdict(float)
        by_pid = cpu_by_process(self.pids())
        kinds = {pid: self.kind(pid) for pid in by_pid}
        for pid, seconds in by_pid.items():
            spent[kinds[pid]] += seconds
        for (pid, _), (name, seconds) in cpu_by_thread(list(by_pid)).items():
            spent[f"  {kinds[pid]}: {thread_kind(name)}"] += seconds
        return spent

    def kind(self, pid: int) -> str:
        return "holmd" if pid == self.holmd else box_memory.kind(pid)

    def measure_idle(self, seconds: float) -> None:
        before = self.cpu_now()
        time.sleep(seconds)
        after = self.cpu_now()
        self.idle = {k: (v - before.get(k, 0.0)) / seconds for k, v in after.items()}

    def series(self, kind: str, count: int) -> None:
        """`count` actions of `kind`, and what each cost each process, less its idle."""
        do, actions_per = KINDS[kind]
        if kind.startswith("letter"):
            self.open_page()  # the field has the focus again, and room
        began, before = time.monotonic(), self.cpu_now()
        for n in range(count):
            do(self, n)
        time.sleep(SETTLE_S)
        took, after = time.monotonic() - began, self.cpu_now()
        actions = count * actions_per
        for name, seconds in after.items():
            net = seconds - before.get(name, 0.0) - self.idle.get(name, 0.0) * took
            self.spent[kind][name].append(net * 1000 / actions)

    def end(self) -> None:
        if self.box:
            self.http.request("DELETE", f"/v1/boxes/{self.box}", extra=CONFIRM)
        self.http.close()


def thread_kind(name: str) -> str:
    """A thread's name without its number (ThreadPoolForeg, input-0_0, damage-:240)."""
    return re.sub(r"([-_:]*\d+)+$", "", name) or name


def _click(side: Side, n: int) -> None:
    side.act({"type": "click", "at": dict(zip("xy", BLANK[n % 2], strict=True))})


def _move(side: Side, n: int) -> None:
    side.act({"type": "move", "to": dict(zip("xy", BLANK[n % 2], strict=True))})


def _type(side: Side, n: int) -> None:
    side.act({"type": "type", "text": "abc"})


def _unchanged(side: Side, n: int) -> None:
    side.have = side.frame(side.have).get("hash", side.have)


def _letter(side: Side, n: int) -> None:
    side.act({"type": "type", "text": "x"})
    time.sleep(PAINTED_MS / 1000)


def _letter_and_frame(side: Side, n: int) -> None:
    _letter(side, n)
    answer = side.frame(side.have)
    if answer.get("unchanged"):
        print(f"  {side.name}: a letter's frame came unchanged")
    side.have = answer.get("hash", side.have)


def _host_loop(side: Side, n: int) -> None:
    _click(side, n)
    _type(side, n)
    _unchanged(side, n)


LETTER, LETTER_FRAME = "letter into the field", "letter + its PNG frame"
# Each kind: what one round of it does, and how many actions that round is.
KINDS: dict[str, tuple[Callable[[Side, int], None], int]] = {
    "click": (_click, 1),
    "move": (_move, 1),
    "type 3 letters": (_type, 1),
    "frame, unchanged": (_unchanged, 1),
    LETTER: (_letter, 1),
    LETTER_FRAME: (_letter_and_frame, 1),
    "host.py's loop (per action)": (_host_loop, 2),
}


def figure(side: Side, kind: str, name: str) -> float:
    values = side.spent[kind].get(name)
    return statistics.median(values) if values else 0.0


def report(sides: list[Side], kinds: list[str], threads: bool) -> None:
    names = "".join(f"{side.name[:22]:>24}" for side in sides)
    for kind in kinds:
        print(f"\n{kind}: CPU ms per action{'':22}{names}")
        rows = sorted(
            {r for s in sides for r in s.spent[kind]}, key=lambda r: _order(sides, kind, r)
        )
        for name in rows:
            if name.startswith("  ") and not threads:
                continue
            cells = [figure(s, kind, name) for s in sides]
            if max(abs(c) for c in cells) < 0.02:
                continue
            print(f"  {name[:58]:58}" + "".join(f"{c:>24.3f}" for c in cells))
        totals = [_total(s, kind) for s in sides]
        print(f"  {'all of them':58}" + "".join(f"{t:>24.3f}" for t in totals))
        ceilings = "".join(f"{CORES_MS / t if t > 0 else 0:>24.0f}" for t in totals)
        print(f"  {f'ceiling on {CORES_MS // 1000} cores, actions/s':58}{ceilings}")
        if kind == LETTER_FRAME and LETTER in kinds:
            print(f"\nthe PNG frame alone ({LETTER_FRAME} less {LETTER}){'':12}{names}")
            for name in rows:
                if name.startswith("  ") and not threads:
                    continue
                cells = [figure(s, LETTER_FRAME, name) - figure(s, LETTER, name) for s in sides]
                if max(abs(c) for c in cells) >= 0.02:
                    print(f"  {name[:58]:58}" + "".join(f"{c:>24.3f}" for c in cells))


def _total(side: Side, kind: str) -> float:
    return sum(figure(side, kind, n) for n in side.spent[kind] if not n.startswith("  "))


def _order(sides: list[Side], kind: str, row: str) -> tuple[float, str, float]:
    """Processes by cost, each followed by its threads by cost."""
    process = row.strip().split(":")[0]
    own = max(figure(s, kind, process) for s in sides)
    mine = max(figure(s, kind, row) for s in sides) if row.startswith("  ") else 1e9
    return (-own, process, -mine)


def _features(given: str | None) -> list[str] | None:
    return None if given is None else [f for f in given.split(",") if f]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--actions", type=int, default=300, help="actions in each series")
    parser.add_argument("--rounds", type=int, default=2, help="series of each kind (median)")
    parser.add_argument("--idle-seconds", type=float, default=5)
    parser.add_argument("--threads", action="store_true", help="each kind of thread too")
    parser.add_argument("--features", help="the boxes' features, comma-separated")
    parser.add_argument(
        "--other-features",
        help="with --against, that side's box's features instead (--against this checkout "
        "and --other-features: what a feature costs per action)",
    )
    parser.add_argument("--kinds", help="only these kinds, comma-separated (see --help)")
    add_against(parser)
    args = parser.parse_args()
    features = _features(args.features)
    other_features = features if args.other_features is None else _features(args.other_features)
    kinds = list(KINDS) if not args.kinds else args.kinds.split(",")
    with contextlib.ExitStack() as stack:
        checkouts: list[Path | None] = [None] + ([args.against] if args.against else [])
        sides: list[Side] = []
        for checkout in checkouts:
            base, state_dir, holmd = stack.enter_context(
                served("holm-bench-cost-", ["--chromium"], checkout)
            )
            name = "this checkout" if checkout is None else checkout.resolve().name
            if checkout is not None and args.other_features is not None:
                name += f" ({args.other_features or 'no features'})"
            sides.append(Side(name, base, state_dir, holmd))
            stack.callback(sides[-1].end)
        for side, wanted in zip(sides, [features, other_features], strict=False):
            side.start(wanted)
        time.sleep(3)  # the pages settle
        for side in sides:
            side.measure_idle(args.idle_seconds)
        for r in range(args.rounds):
            for kind in kinds:
                for side in sides if r % 2 == 0 else sides[::-1]:
                    side.series(kind, args.actions)
        print(f"load average after: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"{args.actions} actions a series, median of {args.rounds} series, idle subtracted")
        report(sides, kinds, args.threads)
        errors = sum(s.errors for s in sides)
        if errors:
            print(f"{errors} requests failed")


if __name__ == "__main__":
    main()
