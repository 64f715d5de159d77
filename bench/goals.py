"""Issue 14's figures in one run, each beside its goal and beside this machine's run before
(bench/last_run.py): what a box costs an agent at the plainest steps, at rest, and to get.

    .venv/bin/python bench/goals.py [--rounds 200] [--idle-seconds 20] [--creates 5]
        [--against DIR]

One holmd in its own process (bench/http_api.py's `served`, the durable local store) with
one box of the default spec (1280×800, Chromium), a text field filling its page. The
lean client (bench/lean_http.py) sends, one at a time on one keep-alive connection, a
series of each kind: a batch of one `move`, of one `click`, of one `type` of 10
characters; an unchanged frame (`GET …/frame?have=`); a PNG frame of the screen just
after a letter was typed (the batch of the letter first, then 0.1 s for Chromium to draw
it). Then the box shows a still, simple page: the CPU holmd and every process of the box
spend over `--idle-seconds`, and the box's PSS (bench/box_memory.py), alone on the machine,
then beside a second box on the same page (each box's share of the pages they both map,
Chromium's binary above all, is half). Last, `POST /v1/boxes` to its `ready` answer for
boxes taken from a warm pool and for cold ones (bench/pool.py's `creates`).

With `--against DIR` (a checkout of other code, e.g. `git archive REV | tar -x -C DIR`),
that checkout's holmd and agent are measured too, right after this checkout's, for the
box's figures (REST, idle CPU, PSS): a before and after in one run, printed side by side.
The creates are this checkout's only (bench/pool.py runs its server in this process).

A figure of the run before was measured under that run's load, which on this shared
machine can be twice this one's: the side-by-side benches (`click_path.py --against`,
`local.py --memory --base`) compare code under one load. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import box_memory
from checkout import REPO, short
from click_path import LEAN, UNCHANGED, Side
from http_api import add_against, served
from last_run import keep, previous
from pool import creates
from proc_cpu import share_of_a_core

# Each figure: its name, what it is, its unit and its goal (None: printed beside another).
GOALS: tuple[tuple[str, str, str, float | None], ...] = (
    ("move", "REST move, p50", "ms", 1.0),
    ("click", "REST click, p50", "ms", 2.0),
    ("type", "REST type 10 characters, p50", "ms", 3.0),
    ("png", "PNG frame after a letter, p50", "ms", 10.0),
    ("unchanged", "unchanged frame (have), p50", "ms", 1.0),
    ("idle_cpu", "idle box and holmd, share of a core", "%", 1.0),
    ("pss", "PSS of the idle box, alone", "MiB", 350.0),
    ("pss_two", "PSS of an idle box, 2 side by side", "MiB", 350.0),
    ("pooled", "pooled create → ready, p50", "ms", 100.0),
    ("cold", "cold create → ready, p50", "ms", None),
)
POOL_DISPLAYS = 520


async def rest_figures(side: GoalsSide, rounds: int, warm: int = 20) -> dict[str, float]:
    """p50 ms of each kind of request by the lean client, each kind in a series of its own
    (click_path's `Side.timed`)."""
    for kind in ("move", "click", "type"):
        for n in range(warm + rounds):
            await side.timed(kind, n, n >= warm, clients=(LEAN,))
    painted = [await side.painted_frame(LEAN) for _ in range(warm + rounds)][warm:]
    for n in range(warm + rounds):
        await side.unchanged_frame(n, n >= warm, clients=(LEAN,))
    figures = {
        kind: statistics.median(side.times[kind, LEAN]) for kind in ("move", "click", "type")
    }
    return {
        **figures,
        "png": statistics.median(painted),
        "unchanged": statistics.median(side.times[UNCHANGED, LEAN]),
    }


async def still(side: GoalsSide) -> list[int]:
    """The box of `side` on a still page, once Chromium has ended what it started for its
    start-up and the watcher's last frame is in: the pids of its processes."""
    await side.batch({"type": "open_url", "url": box_memory.PAGE}, client=LEAN)
    await asyncio.sleep(box_memory.IDLE_S)
    return box_memory.box_pids(side.boxes_dir, side.box)


def pss_mib(pids: list[int]) -> float:
    return sum(box_memory.smaps_rollup(pid).get("pss", 0) for pid in pids) / 1024


async def at_rest(side: GoalsSide, idle_s: float) -> dict[str, float]:
    """The box on a still page: holmd's and the box's CPU over `idle_s`, and its PSS alone
    on the machine; then its PSS and a second box's, divided by two."""
    pids = await still(side)
    # The box outlives holmd, so it is not under it: its processes are roots of their own.
    share, _ = await share_of_a_core([side.pid, *pids], idle_s)
    figures = {"idle_cpu": share, "pss": pss_mib(pids)}
    beside = GoalsSide("beside it", side.base, side.pid, side.session, side.boxes_dir)
    try:
        await beside.start()
        pids += await still(beside)
        figures["pss_two"] = pss_mib(pids) / 2
    finally:
        await beside.end()
    return figures


class GoalsSide(Side):
    """click_path's side, knowing where its holmd keeps its boxes."""

    def __init__(
        self, name: str, base: str, pid: int, session: aiohttp.ClientSession, boxes_dir: Path
    ) -> None:
        super().__init__(name, base, pid, session)
        self.boxes_dir = boxes_dir


async def box_figures(
    base: str, pid: int, boxes_dir: Path, rounds: int, idle_s: float
) -> dict[str, float]:
    async with aiohttp.ClientSession() as session:
        side = GoalsSide("this checkout", base, pid, session, boxes_dir)
        try:
            await side.start()
            figures = await rest_figures(side, rounds)
            figures |= await at_rest(side, idle_s)
        finally:
            await side.end()
    return figures


async def create_figures(n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="hgoals-pool-", dir="/tmp") as state:
        cold = await creates(Path(state) / "cold", POOL_DISPLAYS, n, "")
        pooled = await creates(Path(state) / "pooled", POOL_DISPLAYS, n, "default:1")
    return {"pooled": statistics.median(pooled) * 1000, "cold": statistics.median(cold) * 1000}


def side_figures(
    prefix: str, rounds: int, idle_s: float, checkout: Path | None = None
) -> dict[str, float]:
    """The box's figures of one holmd: this checkout's, or `checkout`'s."""
    # holmd is ended outside any event loop: it ends the boxes left with one of its own.
    with served(prefix, ["--chromium"], checkout) as (base, state_dir, pid):
        return asyncio.run(box_figures(base, pid, state_dir / "boxes", rounds, idle_s))


def cell(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:.2f} {unit}"


def report(
    now: dict[str, float],
    before: dict[str, object],
    other: tuple[str, dict[str, float]] | None = None,
) -> None:
    """Each figure beside its goal, `other`'s (a checkout measured in this run) and the
    run before's."""
    kept = before.get("figures")
    was: dict[str, float] = kept if isinstance(kept, dict) else {}
    run_before = f"run before ({before.get('commit', '-')})" if was else "run before"
    name, beside = other or ("", None)
    print(f"\n{'':44}{'goal':>10}{'this run':>12}{name[:18]:>20}{run_before:>26}")
    for key, label, unit, goal in GOALS:
        aim = "" if goal is None else f"≤ {goal:g} {unit}"
        value = now.get(key)
        met = "" if goal is None or value is None else ("  met" if value <= goal else "  not met")
        theirs = "" if beside is None else cell(beside.get(key), unit)
        print(
            f"  {label:42}{aim:>10}{cell(value, unit):>12}{theirs:>20}"
            f"{cell(was.get(key), unit):>26}{met}"
        )
    if was:
        print(f"  (run before: {before.get('at', '?')}, load average {before.get('load', '?')})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--idle-seconds", type=float, default=20)
    parser.add_argument("--creates", type=int, default=5)
    add_against(parser)
    args = parser.parse_args()
    loads = [os.getloadavg()[0]]
    now = side_figures("hgoals-", args.rounds, args.idle_seconds)
    other = None
    if args.against is not None:
        figures = side_figures("hgoals-b-", args.rounds, args.idle_seconds, args.against)
        other = (args.against.resolve().name, figures)
    now |= asyncio.run(create_figures(args.creates))
    loads.append(os.getloadavg()[0])
    load = f"{min(loads):.1f} to {max(loads):.1f}"
    print(f"load average {load} on {os.cpu_count()} cores")
    before = previous("goals")
    report(now, before, other)
    commit = short("HEAD")
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=REPO, check=False)
    with contextlib.suppress(OSError):
        keep(
            "goals",
            {
                "figures": now,
                "commit": commit + ("+" if dirty.returncode else ""),
                "at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "load": load,
            },
        )


if __name__ == "__main__":
    main()
