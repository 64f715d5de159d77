"""How much a fork adds to the steps it does again, and how close forks come to their source;
a fork of k branches against one; and a bisect.

    .venv/bin/python bench/fork.py [STEPS] [ROUNDS] [DISPLAY_BASE]   (default 50, 10, :280)
    .venv/bin/python bench/fork.py branches [STEPS] [DISPLAY_BASE]   (default 50, :280)
    .venv/bin/python bench/fork.py bisect [STEPS] [PORT]             (default 200, 15750)

Branches: a source of STEPS pointer moves 20 ms apart is forked with `count` 1, 4 and 8 on
real local boxes; it prints the wall time of each fork (every branch up and replayed) and its
ratio to the fork of one (the goal: 4 branches in under 2x one).

Bisect: a holmd in this process on the in-memory runtime (a real box per probe would take
minutes; the search is the same) holds a source of STEPS steps whose page shows a word only
from step k on; `holm.bisect` finds k over HTTP, and it prints the forks used (at most
ceil(log2 STEPS) + 1) and the wall time.

Overhead: a source trace of STEPS pointer moves (written as if recorded, with no pauses, and
again with 100 ms pauses) is forked onto a real local box; the replay's overhead per step is
(its wall time - the capped waits - the steps' own time in the engine) / STEPS, target < 5 ms.
The final frame capture is printed apart.

Fidelity: each recorded fixture (fixtures/traces/recorded/) is put in an engine's store as if
its box had run there, and forked ROUNDS times (10 times 3 fixtures: 30 forks); it prints the
share of forks whose last frame has the source's pixels, the exact check strict replay makes
by default, and the largest distance of one that did not.
"""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from aiohttp import web

from holm.adapters.local.runtime import LocalRuntime
from holm.adapters.memory.runtime import MemoryRuntime
from holm.bisect import Predicate, bisect
from holm.client import SyncHolmClient
from holm.config import load_config
from holm.engine import Engine
from holm.events import MemoryStore
from holm.events.local import read_trace_file
from holm.http.app import create_app
from holm.replay import fork_box, fork_run
from holm.replay.diff import diff_boxes
from holm.wire.actions import Move, OpenUrl
from holm.wire.api import ForkBranch, ForkRequest
from holm.wire.entries import Acted, BoxCreated, BoxReady, Entry, FrameSeen, acted_key
from holm.wire.spec import Placement, Spec, spec_digest
from holm.wire.values import Point

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "recorded"


def moves_trace(box_id: str, steps: int, gap_ms: int) -> list[Entry]:
    start = int(time.time() * 1000) - 3_600_000
    spec, placement = Spec(), Placement(runtime="local")
    entries: list[Entry] = [
        BoxCreated(
            seq=0,
            at_ms=start,
            actor="agent",
            box_id=box_id,
            runtime="local",
            spec=spec,
            placement=placement,
            spec_digest=spec_digest(spec),
            expires_at_ms=start + 3_600_000,
        ),
        BoxReady(seq=1, at_ms=start + 1000, actor="system"),
    ]
    for n in range(steps):
        move = Move(to=Point(x=100 + n * 7 % 1000, y=100 + n * 13 % 600))
        entries.append(
            Acted(
                seq=len(entries),
                at_ms=start + 1000 + (n + 1) * gap_ms,
                actor="agent",
                screen=0,
                action=move,
                ok=True,
                key=acted_key(0, move),
            )
        )
    return entries


async def overhead(engine: Engine, steps: int, gap_ms: int) -> None:
    box_id = f"box_bench_moves_{gap_ms}"
    await engine.journal.append(box_id, moves_trace(box_id, steps, gap_ms))
    began = time.perf_counter()
    run = await fork_run(engine, box_id, ForkRequest())
    whole = time.perf_counter() - began
    timing = run.timing
    assert run.report.ok == steps, run.report
    per_step = (timing.wall - timing.waited - timing.in_steps - timing.finishing) / steps
    print(
        f"  {steps} moves, {gap_ms:>3} ms apart: fork {whole:6.2f} s (box up "
        f"{whole - timing.wall:5.2f} s), replay {timing.wall:6.3f} s = waits "
        f"{timing.waited:6.3f} s + steps {timing.in_steps:6.3f} s "
        f"({timing.in_steps / steps * 1000:5.2f} ms each) + final frame "
        f"{timing.finishing * 1000:5.1f} ms + overhead {per_step * 1000:6.3f} ms/step"
    )
    await engine.delete_box(run.box.id)


async def fidelity(engine: Engine, rounds: int) -> None:
    equal = total = 0
    largest = 0.0
    for path in sorted(RECORDED.glob("*.jsonl")):
        entries = read_trace_file(path).entries
        source = next(e.box_id for e in entries if isinstance(e, BoxCreated))
        await engine.journal.append(source, entries)
        for frame_hash in {e.frame for e in entries if isinstance(e, FrameSeen)}:
            png = (RECORDED / "frames" / path.stem / f"{frame_hash}.png").read_bytes()
            await engine.store.put_frame(source, frame_hash, png)
        distances = []
        for _ in range(rounds):
            run = await fork_run(engine, source, ForkRequest())
            diff = await diff_boxes(engine, source, run.box.id)
            await engine.delete_box(run.box.id)
            (frame,) = diff.frames
            distance = frame.distance if frame.distance is not None else 1.0
            distances.append(distance)
            total += 1
            equal += frame.pixels_equal
            largest = max(largest, distance)
        print(
            f"  {path.stem:<14} {rounds} forks: pixels equal {sum(d == 0 for d in distances)}"
            f", distances {', '.join(f'{d:.2e}' for d in distances)}"
        )
    print(
        f"  fidelity: {equal}/{total} forks with the source's pixels "
        f"({equal / total:.0%}); largest distance {largest:.2e}"
    )


async def branches(engine: Engine, steps: int) -> None:
    box_id = "box_bench_branches"
    await engine.journal.append(box_id, moves_trace(box_id, steps, 20))
    one = 0.0
    for count in (1, 4, 8):
        began = time.perf_counter()
        result = await fork_box(engine, box_id, ForkRequest(count=count))
        wall = time.perf_counter() - began
        made = result.branches or [ForkBranch(box=result.box, replay=result.replay)]
        assert all(b.replay.ok == steps for b in made), [b.replay for b in made]
        one = one or wall
        print(f"  {count} branches of {steps} moves: {wall:6.2f} s, {wall / one:4.2f}x one")
        for branch in made:
            await engine.delete_box(branch.box.id)
    # What 4 branches cost before `count`: 4 forks, one after the other.
    began = time.perf_counter()
    for _ in range(4):
        run = await fork_run(engine, box_id, ForkRequest())
        await engine.delete_box(run.box.id)
    wall = time.perf_counter() - began
    print(f"  4 forks one after another:  {wall:6.2f} s, {wall / one:4.2f}x one")


def bisect_figures(steps: int, port: int) -> None:
    """`holm.bisect` against a holmd on the in-memory runtime, served from a thread."""
    state_dir = Path(tempfile.mkdtemp(prefix="holm-bb-", dir="/tmp"))
    config = load_config(
        {"HOLM_SERVER_ADDR": f"127.0.0.1:{port}", "HOLM_SERVER_TOKEN": "bench"},
        state_dir=str(state_dir),
    )
    runtime = MemoryRuntime(server_id="holm-bench")
    app = create_app(config, runtimes={runtime.name: runtime})
    runner = web.AppRunner(app, access_log=None)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(runner.setup())
    loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", port).start())
    serving = threading.Thread(target=loop.run_forever, daemon=True)
    serving.start()
    word_at = steps * 2 // 3
    try:
        with SyncHolmClient(f"http://127.0.0.1:{port}", "bench") as client:
            source = client.create_box(placement=Placement(runtime="memory")).id
            for step in range(1, steps + 1):
                page = "Shipped" if step >= word_at else "Waiting"
                action = (
                    OpenUrl(url=f"data:text/html,<p>Order {page}</p>")
                    if step in (1, word_at)
                    else Move(to=Point(x=step % 500, y=10))
                )
                client.act(source, [action])
            began = time.perf_counter()
            report = bisect(client, source, Predicate(kind="text", value="Order Shipped"))
            wall = time.perf_counter() - began
        assert report.step == word_at, report
        bound = math.ceil(math.log2(steps)) + 1
        print(
            f"  bisect of {steps} steps (the word from step {word_at}): found step "
            f"{report.step} in {report.forks} forks (bound {bound}), {wall:5.2f} s"
        )
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        serving.join(10)
        shutil.rmtree(state_dir, ignore_errors=True)


async def main() -> None:
    if sys.argv[1:2] == ["branches"]:
        await main_branches(
            int(sys.argv[2]) if len(sys.argv) > 2 else 50,
            int(sys.argv[3]) if len(sys.argv) > 3 else 280,
        )
        return
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    display_base = int(sys.argv[3]) if len(sys.argv) > 3 else 280
    state_dir = Path(tempfile.mkdtemp(prefix="holm-bf-", dir="/tmp"))
    runtime = LocalRuntime(
        state_dir / "boxes", "holm-bench", display_base=display_base, display_count=20
    )
    config = load_config({}, state_dir=str(state_dir))
    engine = Engine(config, MemoryStore(), {"local": runtime}, server_id="holm-bench")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"fork bench on the local runtime (load average {load})")
    try:
        print("replay overhead:")
        for gap_ms in (0, 100):
            await overhead(engine, steps, gap_ms)
        print("fork fidelity over the recorded fixtures:")
        await fidelity(engine, rounds)
    finally:
        for state in engine.boxes():
            await engine.delete_box(state.id)
        await engine.close()
        await runtime.close()
        shutil.rmtree(state_dir, ignore_errors=True)


async def main_branches(steps: int, display_base: int) -> None:
    state_dir = Path(tempfile.mkdtemp(prefix="holm-bk-", dir="/tmp"))
    runtime = LocalRuntime(
        state_dir / "boxes", "holm-bench", display_base=display_base, display_count=20
    )
    config = load_config({}, state_dir=str(state_dir))
    engine = Engine(config, MemoryStore(), {"local": runtime}, server_id="holm-bench")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"fork branches on the local runtime (load average {load})")
    try:
        await branches(engine, steps)
    finally:
        for state in engine.boxes():
            await engine.delete_box(state.id)
        await engine.close()
        await runtime.close()
        shutil.rmtree(state_dir, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["bisect"]:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"bisect on the in-memory runtime over HTTP (load average {load})")
        bisect_figures(
            int(sys.argv[2]) if len(sys.argv) > 2 else 200,
            int(sys.argv[3]) if len(sys.argv) > 3 else 15750,
        )
    else:
        asyncio.run(main())
