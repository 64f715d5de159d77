"""Figures of the in-box agent, on real Xvfb displays (:218 and up). Prints, asserts nothing.

    .venv/bin/python bench/agent.py [--rounds 200] [--starts 3] [--idle-seconds 10]
    .venv/bin/python bench/agent.py --against DIR [--rounds 200]

With `--against DIR` (a checkout of other code, e.g. a git worktree), only the input round
trips (move, click, type, and a request that does nothing) and an unchanged frame of this
checkout's agent beside DIR's, each with Chromium on its own displays, in rounds that
alternate.

- click round trip (client → agent → XTEST + sync → answer), p50/p95, beside an `xdotool
  click` subprocess on the same display in the same run;
- typing 10 characters, p50;
- a 1280x800 frame: unchanged (from the tile hashes DAMAGE keeps: no pixel read) beside
  the same screen read and hashed whole (what every unchanged frame cost the agent before
  DAMAGE, done here in this process on the agent's display, without the round trip: a
  region capture no longer reads the screen), and changed (hash + PNG), p50;
- the CPU the agent's box uses on a still Chromium page for `--idle-seconds`, while a
  watcher waits on `await_change` (now), and, for before DAMAGE, the agent's CPU plus that
  of this process reading and hashing the whole screen once a second (the idle watcher
  then; four times a second while "hot");
- desktop ready time (agent start → ready), p50, with and without Chromium.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from proc_cpu import cpu_seconds  # noqa: E402
from Xlib.display import Display  # noqa: E402

from holm.adapters.agent_desktop import AgentDesktop  # noqa: E402
from holm.agent.frames.capture import Grabber  # noqa: E402
from holm.agent.frames.tiles import FrameHasher  # noqa: E402
from holm.wire import actions as a  # noqa: E402
from holm.wire.values import Point, Region  # noqa: E402

DISPLAY_BASE = "218"


def start(tmp: Path, *args: str, code: Path = REPO) -> tuple[subprocess.Popen[bytes], Path]:
    """An agent of the checkout `code`, its run dir and home in `tmp`."""
    site = next((REPO / ".venv" / "lib").glob("python3*/site-packages"))
    (tmp / "home").mkdir(parents=True, exist_ok=True)
    env = {
        "HOME": str(tmp / "home"),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": f"{code}:{site}",
    }
    proc = subprocess.Popen(
        ["/usr/bin/python3", "-m", "holm.agent", "--run-dir", str(tmp / "run"), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp / "agent.log", "wb"),  # noqa: SIM115
        start_new_session=True,
        # `-m` puts the working directory first on the path: not a checkout's.
        cwd=tmp,
    )
    return proc, tmp / "run" / "agent.sock"


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def ms(samples: list[float], q: float) -> str:
    ordered = sorted(samples)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.2f} ms"


async def time_calls(rounds: int, call: object) -> list[float]:
    samples = []
    for i in range(rounds):
        t = time.perf_counter()
        await call(i)  # type: ignore[operator]
        samples.append(time.perf_counter() - t)
    return samples


class WholeRead:
    """What an unchanged frame cost before DAMAGE: the whole screen read (MIT-SHM) and
    hashed tile by tile, done here on the agent's display with the agent's code, on a
    thread whose CPU time is counted."""

    def __init__(self, display: str, width: int, height: int) -> None:
        self.grabber = Grabber(Display(display), width, height)
        self.whole = Region(0, 0, width, height)
        self.hasher = FrameHasher(b"bench")
        self.cpu = 0.0

    def once(self) -> str:
        began = time.thread_time()
        shot = self.grabber.grab(self.whole)
        digest = self.hasher.picture(shot.data, shot.width, shot.height)
        self.cpu += time.thread_time() - began
        return digest

    def close(self) -> None:
        self.grabber.close()
        self.grabber.conn.close()


async def idle_cpu(desktop: AgentDesktop, agent: int, seconds: float, read: WholeRead) -> None:
    async def waiting() -> None:
        count = await desktop.await_change(0, -1, 0)
        while True:
            count = await desktop.await_change(0, count, 600_000)
            await desktop.frame_hash(0)

    async def polling(every: float) -> None:
        while True:
            await asyncio.to_thread(read.once)
            await asyncio.sleep(every)

    shares = []
    for watcher in (waiting(), polling(1.0), polling(0.25)):
        task = asyncio.create_task(watcher)
        began, (used, _), polled = time.monotonic(), cpu_seconds([agent]), read.cpu
        await asyncio.sleep(seconds)
        spent = cpu_seconds([agent])[0] - used + read.cpu - polled
        shares.append(spent / (time.monotonic() - began) * 100)
        task.cancel()
    print(
        f"idle box, Chromium on a still page, {seconds:.0f} s each: {shares[0]:.2f} % of a "
        f"core waiting for DAMAGE; before: {shares[1]:.2f} % polling once a second, "
        f"{shares[2]:.2f} % four times a second"
    )


async def ready_time(tmp: Path, *args: str) -> float:
    t = time.perf_counter()
    proc, sock = start(tmp, "--display-base", DISPLAY_BASE, *args)
    try:
        desktop = await AgentDesktop.connect_when_up(sock, 20)
        await desktop.ready(60)
        elapsed = time.perf_counter() - t
        await desktop.close()
    finally:
        stop(proc)
    return elapsed


ACTIONS: dict[str, Callable[[int], a.Action]] = {
    "apps (no input: the round trip alone)": lambda i: a.Apps(),
    "type 10 characters": lambda i: a.Type(text="abcdefghij"),
    "move": lambda i: a.Move(to=Point(x=300 + i % 50, y=300)),
    "click": lambda i: a.Click(at=Point(x=300 + i % 50, y=300)),
}
UNCHANGED = "frame unchanged (have), screen settled"


async def against(tmp: Path, other: Path, rounds: int) -> None:
    """Input round trips of this checkout's agent beside `other`'s, each on its own
    displays with Chromium, in rounds that alternate which goes first."""
    kinds = [*ACTIONS, UNCHANGED]
    sides: list[tuple[str, subprocess.Popen[bytes], AgentDesktop, dict[str, list[float]]]] = []
    try:
        for name, code, base in (("this checkout", REPO, "231"), (other.name, other, "241")):
            proc, sock = start(tmp / name.replace(" ", "-"), "--display-base", base, code=code)
            desktop = await AgentDesktop.connect_when_up(sock, 30)
            sides.append((name, proc, desktop, {kind: [] for kind in kinds}))
            await desktop.ready(60)
        for i in range(rounds):
            for _, _, desktop, times in sides if i % 2 else sides[::-1]:
                for kind, action in ACTIONS.items():
                    began = time.perf_counter()
                    await desktop.act(0, action(i))
                    times[kind].append(time.perf_counter() - began)
                # Keys sent within 100 ms of a click wait for it (docs/agent.md, Input): the
                # next round's typing comes later. The screen settles meanwhile.
                await asyncio.sleep(0.11)
                have = (await desktop.frame_hash(0))[0]
                began = time.perf_counter()
                unchanged = await desktop.frame(0, have=have)
                if unchanged.unchanged:
                    times[UNCHANGED].append(time.perf_counter() - began)
        print(f"agent round trips, p50 / p95{'':22}" + "".join(f"{s[0]:>26}" for s in sides))
        for kind in kinds:
            cells = "".join(f"{ms(s[3][kind], 0.5):>14} / {ms(s[3][kind], 0.95)}" for s in sides)
            print(f"  {kind:46}{cells}")
    finally:
        for _, proc, desktop, _ in sides:
            await desktop.close()
            stop(proc)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--idle-seconds", type=float, default=10)
    parser.add_argument(
        "--against",
        type=Path,
        help="only the input round trips, beside the agent of this other checkout",
    )
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="holm-bench-agent-"))
    if args.against is not None:
        print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        try:
            await against(tmp, args.against.resolve(), args.rounds)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
        return
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    try:
        proc, sock = start(tmp / "main", "--display-base", DISPLAY_BASE)
        try:
            desktop = await AgentDesktop.connect_when_up(sock, 20)
            info = await desktop.ready(60)
            display = info.screens[0].display
            await desktop.act(0, a.OpenUrl(url="data:text/html,<h1>holm bench</h1><p>text</p>"))
            await desktop.act(0, a.WaitStill(settle_ms=300))

            pings = await time_calls(args.rounds, lambda i: desktop.ping())
            print(f"ping round trip     p50 {ms(pings, 0.5)}  p95 {ms(pings, 0.95)}")
            clicks = await time_calls(
                args.rounds, lambda i: desktop.act(0, a.Click(at=Point(x=600 + i % 50, y=500)))
            )
            xdotool_env = {**os.environ, "DISPLAY": display}
            xdotool = []
            for i in range(max(10, args.rounds // 10)):
                t = time.perf_counter()
                subprocess.run(
                    ["xdotool", "mousemove", str(600 + i % 50), "500", "click", "1"],
                    env=xdotool_env,
                    check=True,
                )
                xdotool.append(time.perf_counter() - t)
            print(f"click round trip    agent p50 {ms(clicks, 0.5)}  p95 {ms(clicks, 0.95)}")
            print(f"                    xdotool p50 {ms(xdotool, 0.5)}  p95 {ms(xdotool, 0.95)}")

            # Typing goes to a page with no input: the keys are delivered, nothing changes.
            await asyncio.sleep(0.2)
            typing = await time_calls(
                args.rounds, lambda i: desktop.act(0, a.Type(text="abcdefghij"))
            )
            print(f"type 10 characters  p50 {ms(typing, 0.5)}  p95 {ms(typing, 0.95)}")

            first = await desktop.frame(0)
            unchanged = await time_calls(args.rounds, lambda i: desktop.frame(0, have=first.hash))
            read = WholeRead(display, first.width, first.height)
            read_whole = await time_calls(args.rounds, lambda i: asyncio.to_thread(read.once))
            changed = await time_calls(
                max(10, args.rounds // 4), lambda i: desktop.frame(0, have="px:other")
            )
            size = f"{first.width}x{first.height}"
            print(f"frame {size} unchanged p50 {ms(unchanged, 0.5)}  p95 {ms(unchanged, 0.95)}")
            print(
                f"  read and hashed whole (before; here, no round trip) p50 "
                f"{ms(read_whole, 0.5)}  p95 {ms(read_whole, 0.95)}"
            )
            print(
                f"frame {size} changed   p50 {ms(changed, 0.5)}  p95 {ms(changed, 0.95)}"
                f"  (PNG {len(first.png or b'') // 1024} KiB)"
            )
            await idle_cpu(desktop, proc.pid, args.idle_seconds, read)
            read.close()
            await desktop.close()
        finally:
            stop(proc)

        proc, sock = start(tmp / "bare", "--display-base", DISPLAY_BASE, "--no-chromium")
        try:
            desktop = await AgentDesktop.connect_when_up(sock, 20)
            await desktop.ready(60)
            bare_clicks = await time_calls(
                args.rounds, lambda i: desktop.act(0, a.Click(at=Point(x=600 + i % 50, y=500)))
            )
            print(
                f"click round trip on a screen without Chromium p50 {ms(bare_clicks, 0.5)}"
                f"  p95 {ms(bare_clicks, 0.95)}"
            )
            await desktop.close()
        finally:
            stop(proc)

        with_chromium = [await ready_time(tmp / f"c{i}") for i in range(args.starts)]
        without = [await ready_time(tmp / f"n{i}", "--no-chromium") for i in range(args.starts)]
        full, bare = statistics.median(with_chromium), statistics.median(without)
        print(
            f"ready (start → ready) p50 {full:.2f} s with Chromium, {bare:.2f} s without: "
            f"Chromium is {full - bare:.2f} s of it"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
