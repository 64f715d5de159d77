"""How fast the local runtime is: a box ready from `create` (p50 over N boxes, one after the
other), how much of that is Chromium, and click and frame through the sandboxed agent.

    .venv/bin/python bench/local.py [N] [DISPLAY_BASE] [--offline]
        (default 5 boxes, displays :220…, boxes with policy.network true)

Chromium's part is measured by doing the same boxes without Chromium (`--no-chromium`):
what is left is the sandbox, the agent, Xvfb, openbox and x11vnc. The sandbox's own part
(bwrap up, ids mapped, network attached) and, for boxes with the network, pasta's part of
it are timed around the runtime's `launch` and `network.attach`; pasta comes up while the
box starts, and how long the runtime still waits for it is timed around `Attaching.wait`.
`--offline` makes boxes without the network (their own namespace, no pasta).

The same file runs against another checkout of holm (PYTHONPATH=<that checkout>), so
that two versions are measured in one sitting.

    .venv/bin/python bench/local.py --memory [--base REV] [--rounds N] [--together K] [--idle S]

prints instead what an idle box of the default spec costs in memory (box_memory.py): PSS
by kind of process, the whole box's PSS and USS, and how many such boxes 24 GiB holds,
for the code of REV (default: where this branch left main) beside this checkout's, their
boxes started in turns (default 3 rounds). With `--together K`, K boxes run side by side
and each figure is per box: what a server with K boxes holds for each. `--idle S` measures
after S seconds idle on the page (default 10).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from holm.adapters.local import runtime as runtime_module
from holm.adapters.local.records import BoxPaths
from holm.adapters.local.runtime import LocalRuntime
from holm.wire.actions import Click
from holm.wire.spec import Placement, Policy, Spec
from holm.wire.values import Point

SPEC = Spec()
# Seconds spent in each call of the wrapped functions, by name.
TIMED: dict[str, list[float]] = {}


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMED.setdefault(name, []).append(time.perf_counter() - start)

    return run


def time_the_sandbox() -> None:
    runtime_module.launch = timed("sandbox launch", runtime_module.launch)  # type: ignore[attr-defined]
    try:
        from holm.adapters.local import network
    except ImportError:  # a holm from before boxes had their own network
        return
    network.attach = timed("  of it, pasta start", network.attach)
    # What is left of pasta's start-up once the box's own start-up hid what it could.
    wait = network.Attaching.wait
    network.Attaching.wait = timed("pasta up, waited", wait)  # type: ignore[method-assign]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


async def time_create(runtime: LocalRuntime) -> tuple[float, float, str]:
    """Seconds to ready, and to the agent's socket showing (the sandbox and the agent's
    interpreter up, before any screen)."""
    box_id = f"box_{uuid.uuid4().hex[:12]}"
    socket = BoxPaths(runtime.boxes_dir, box_id).agent_socket
    start = time.perf_counter()
    listening = 0.0

    async def watch() -> None:
        nonlocal listening
        while not socket.exists():
            await asyncio.sleep(0.002)
        listening = time.perf_counter() - start

    watcher = asyncio.create_task(watch())
    await runtime.create(box_id, SPEC, Placement())
    ready = time.perf_counter() - start
    await watcher
    return ready, listening, box_id


async def boxes(
    runtime: LocalRuntime, n: int, keep_last: bool
) -> tuple[list[float], list[float], str]:
    ready, listening, kept = [], [], ""
    for i in range(n):
        r, s, box_id = await time_create(runtime)
        ready.append(r)
        listening.append(s)
        if keep_last and i == n - 1:
            kept = box_id
        else:
            await runtime.delete(box_id)
    return ready, listening, kept


async def p50(repeat: int, step: Callable[[], Awaitable[object]]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        await step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def main(n: int, display_base: int) -> None:
    state = Path(tempfile.mkdtemp(prefix="holm-bench-", dir="/tmp"))
    with_chromium = LocalRuntime(
        state / "boxes", "bench", display_base=display_base, display_count=20
    )
    without = LocalRuntime(
        state / "boxes", "bench", display_base=display_base, display_count=20, chromium=False
    )
    kept = ""
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average before: {load} ({os.cpu_count()} cpus; others' work counts in it)")
    try:
        bare_ready, bare_listen, _ = await boxes(without, n, keep_last=False)
        full_ready, full_listen, kept = await boxes(with_chromium, n, keep_last=True)
        full, bare = statistics.median(full_ready), statistics.median(bare_ready)
        print(f"box ready from create, p50 of {n} (1 screen, 1280x800):")
        spread = f"min {ms(min(full_ready))}, max {ms(max(full_ready))}"
        print(f"  with Chromium        {ms(full)}   ({spread})")
        print(f"  without Chromium     {ms(bare)}")
        print(f"  Chromium's part      {ms(full - bare)}   ({(full - bare) / full:.0%})")
        print(f"  agent socket shows   {ms(statistics.median(full_listen + bare_listen))}")
        for name, took in TIMED.items():
            print(f"  {name:<20} {ms(statistics.median(took))}   (p50 of {len(took)})")

        desktop = await with_chromium.desktop(kept)
        click = Click(at=Point(x=640, y=400))

        async def do_click() -> None:
            await desktop.act(0, click)
            await desktop.end_batch(0)

        print("through the sandboxed agent (Chromium on screen):")
        print(f"  frame (PNG) p50      {ms(await p50(30, lambda: desktop.frame(0)))}")
        # `have` is the hash of the frame before, as a client polling the screen sends it.
        last = (await desktop.frame(0)).hash
        answers: list[bool] = []

        async def poll() -> None:
            nonlocal last
            frame = await desktop.frame(0, have=last)
            answers.append(frame.unchanged)
            last = frame.hash

        polled = await p50(100, poll)
        still = f"{sum(answers)}/{len(answers)} unchanged"
        print(f"  frame have=last p50  {ms(polled)}   ({still})")
        print(f"  frame hash p50       {ms(await p50(100, lambda: desktop.frame_hash(0)))}")
        # Last: clicks into the page can start changes on screen (focus, hover).
        print(f"  click p50            {ms(await p50(200, do_click))}")
    finally:
        if kept:
            await with_chromium.delete(kept)
        await with_chromium.close()
        await without.close()
        shutil.rmtree(state, ignore_errors=True)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("count", type=int, nargs="?", default=5)
    parser.add_argument("display_base", type=int, nargs="?", default=220)
    parser.add_argument("--offline", action="store_true")
    parser.add_argument("--memory", action="store_true", help="only the memory figures")
    parser.add_argument("--base", help="with --memory: the code to compare with (a git rev)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--together", type=int, default=1, help="with --memory: boxes measured side by side"
    )
    parser.add_argument(
        "--idle", type=float, default=10.0, help="with --memory: seconds idle before measuring"
    )
    # One box measured, for --memory, with the code on PYTHONPATH; prints JSON.
    parser.add_argument("--memory-box", type=int, metavar="DISPLAY_BASE", help=argparse.SUPPRESS)
    return parser.parse_args()


if __name__ == "__main__":
    options = parse()
    if options.memory_box is not None:
        import box_memory

        measured = box_memory.boxes(options.memory_box, options.together, options.idle)
        print(json.dumps(asyncio.run(measured)))
    elif options.memory:
        import box_memory
        from checkout import merge_base

        box_memory.compare(
            options.base or merge_base(),
            options.rounds,
            options.display_base,
            options.together,
            options.idle,
        )
    else:
        if options.offline:
            SPEC = Spec(policy=Policy(network=False))
        print(f"holm from {Path(runtime_module.__file__).resolve().parents[3]}")
        print(f"boxes with policy.network {SPEC.policy.network}")
        time_the_sandbox()
        asyncio.run(main(options.count, options.display_base))
