"""Figures of a Wayland screen beside an X11 one, in one run: two agents of this checkout
with Chromium, one on Xvfb (displays :240 and up) and one on headless sway, measured in
rounds that alternate between them. Prints, asserts nothing.

    .venv/bin/python bench/wayland.py [--rounds 200] [--starts 3] [--idle-seconds 10]

- box ready: agent start → ready (its screen's display server, Chromium drawn and still), p50;
- click round trip (client → agent → input + its server's wait → answer), p50/p95;
- typing 10 characters (ASCII, then 10 others, which a Wayland keymap must bind), p50;
- a 1280x800 frame: full (of a screen changed since the last: read, hashed, PNG) and
  unchanged (`have`: no pixel read), p50;
- PSS of the idle agent and everything it started (display server, Chromium, viewer), MiB.

The goal (issue 41): each Wayland figure within 1.5× of X11's.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agent import ms, start, stop, time_calls  # noqa: E402
from box_memory import smaps_rollup  # noqa: E402
from proc_cpu import cpu_by_process  # noqa: E402

from holm.adapters.agent_desktop import AgentDesktop  # noqa: E402
from holm.wire import actions as a  # noqa: E402
from holm.wire.values import Point  # noqa: E402

SERVERS = ("x11", "wayland")
PAGE = (
    "data:text/html,<body style='margin:0'><input id=f autofocus "
    "style='position:fixed;left:100px;top:100px;width:900px;font-size:20px'></body>"
)


def args_of(server: str) -> list[str]:
    common = ["--screens", "1", "--width", "1280", "--height", "800"]
    return [*common, "--display-base", "240"] if server == "x11" else [*common, "--server", server]


async def ready_s(tmp: Path, server: str) -> tuple[float, subprocess.Popen[bytes], AgentDesktop]:
    began = time.monotonic()
    proc, sock = start(tmp, *args_of(server))
    desktop = await AgentDesktop.connect_when_up(sock, 30)
    await desktop.ready(120)
    return time.monotonic() - began, proc, desktop


def pss_mib(root: int) -> float:
    return sum(smaps_rollup(pid).get("pss", 0) for pid in cpu_by_process([root])) / 1024


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    options = parser.parse_args()
    figures: dict[str, dict[str, list[float]]] = {s: {} for s in SERVERS}

    with tempfile.TemporaryDirectory(prefix="hwb-", dir="/tmp") as tmp:
        for n in range(options.starts):
            for server in SERVERS:
                took, proc, desktop = await ready_s(Path(tmp) / f"{server}-start{n}", server)
                figures[server].setdefault("ready", []).append(took)
                await desktop.close()
                stop(proc)

        running = {}
        for server in SERVERS:
            _, proc, desktop = await ready_s(Path(tmp) / server, server)
            running[server] = (proc, desktop)
            await desktop.act(0, a.OpenUrl(url=PAGE))
            await desktop.act(0, a.Click(at=Point(x=500, y=200)))
            await desktop.act(0, a.WaitStill(settle_ms=500, within_ms=10_000))

        # Rounds alternate between the servers: a busy moment of the machine falls on both.
        for _ in range(max(1, options.rounds // 20)):
            for server, (_, desktop) in running.items():
                f = figures[server]

                async def click(i: int, d: AgentDesktop = desktop) -> None:
                    await d.act(0, a.Click(at=Point(x=1100 + i % 50, y=650)))

                f.setdefault("click", []).extend(await time_calls(20, click))

                async def type_ascii(_: int, d: AgentDesktop = desktop) -> None:
                    await d.act(0, a.Type(text="abcdefghij"))

                async def type_other(_: int, d: AgentDesktop = desktop) -> None:
                    await d.act(0, a.Type(text="αβγδεζηθικ"))

                f.setdefault("type 10", []).extend(await time_calls(5, type_ascii))
                f.setdefault("type 10 non-Latin", []).extend(await time_calls(5, type_other))
                await d_still(desktop)

                # A full frame of a screen that changed since the last (a character typed
                # and drawn, not timed): read, hashed and encoded anew.
                for _ in range(5):
                    await desktop.act(0, a.Type(text="x"))
                    await desktop.act(0, a.WaitStill(settle_ms=100, within_ms=5000))
                    began = time.perf_counter()
                    await desktop.frame(0)
                    f.setdefault("full frame", []).append(time.perf_counter() - began)
                have = (await desktop.frame(0)).hash

                async def unchanged(_: int, d: AgentDesktop = desktop, h: str = have) -> None:
                    frame = await d.frame(0, have=h)
                    assert frame.unchanged

                f.setdefault("unchanged frame", []).extend(await time_calls(20, unchanged))

        await asyncio.sleep(options.idle_seconds)
        pss = {server: pss_mib(proc.pid) for server, (proc, _) in running.items()}
        for proc, desktop in running.values():
            await desktop.close()
            stop(proc)

    print(f"{'':20}{'x11':>30}{'wayland':>30}{'wayland/x11':>14}")
    for name in ("ready", "click", "type 10", "type 10 non-Latin", "full frame", "unchanged frame"):
        x, w = figures["x11"][name], figures["wayland"][name]
        ratio = statistics.median(w) / statistics.median(x)
        cells = [f"{ms(s, 0.5)} (p95 {ms(s, 0.95)})" for s in (x, w)]
        print(f"{name:20}{cells[0]:>30}{cells[1]:>30}{ratio:>13.2f}x")
    ratio = pss["wayland"] / pss["x11"]
    cells = [f"{pss[s]:.0f} MiB" for s in SERVERS]
    print(f"{'PSS of an idle box':20}{cells[0]:>30}{cells[1]:>30}{ratio:>13.2f}x")


async def d_still(desktop: AgentDesktop) -> None:
    """The typing done and drawn: the frames that follow read a still screen."""
    await desktop.act(0, a.Press(chord=["ctrl+a"], then=["BackSpace"]))
    await desktop.act(0, a.WaitStill(settle_ms=300, within_ms=10_000))


if __name__ == "__main__":
    asyncio.run(main())
