"""How fast the local runtime is: a box ready from `create` (p50 over N boxes, one after the
other), how much of that is Chromium, and click and frame through the sandboxed agent.

    .venv/bin/python bench/local.py [N] [DISPLAY_BASE]      (default 5 boxes, displays :220…)

Chromium's part is measured by doing the same boxes without Chromium (`--no-chromium`):
what is left is the sandbox, the agent, Xvfb, openbox and x11vnc.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from holm.adapters.local.records import BoxPaths
from holm.adapters.local.runtime import LocalRuntime
from holm.wire.actions import Click
from holm.wire.spec import Placement, Spec
from holm.wire.values import Point


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
    await runtime.create(box_id, Spec(), Placement())
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

        took = await p50(100, poll)
        still = f"{sum(answers)}/{len(answers)} unchanged"
        print(f"  frame have=last p50  {ms(took)}   ({still})")
        print(f"  frame hash p50       {ms(await p50(100, lambda: desktop.frame_hash(0)))}")
        # Last: clicks into the page can start changes on screen (focus, hover).
        print(f"  click p50            {ms(await p50(200, do_click))}")
    finally:
        if kept:
            await with_chromium.delete(kept)
        await with_chromium.close()
        await without.close()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    base = int(sys.argv[2]) if len(sys.argv) > 2 else 220
    asyncio.run(main(count, base))
