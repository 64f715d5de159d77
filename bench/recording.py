"""Figures of screen recording, on a real agent (display :226 and up) with Chromium showing
an animated page (a still screen costs ffmpeg next to nothing). Prints, asserts nothing.

    .venv/bin/python bench/recording.py [--rounds 200] [--fps 12]

- ffmpeg's CPU while recording a 1280x800 screen, as a share of one core;
- a click's round trip p50/p95 before and during the recording, in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent import ms, start, stop, time_calls

from holm.adapters.agent_desktop import AgentDesktop
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.values import Point

DISPLAY_BASE = "226"
MOVING = (
    "data:text/html,<body style='margin:0'><h1 id=t></h1><script>"
    "const step = (now) => { document.body.style.background = `hsl(${now / 20 %25 360}, 70%25,"
    " 50%25)`; document.getElementById('t').textContent = now.toFixed(0);"
    " requestAnimationFrame(step); }; requestAnimationFrame(step);</script></body>"
)


def cpu_seconds(pid: int) -> float:
    """User and system time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ffmpeg_pid(agent: int) -> int:
    """The agent's ffmpeg child (the agent starts it itself)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        comm, rest = entry.joinpath("stat").read_text().rsplit(")", 1)
        if comm.endswith("(ffmpeg") and int(rest.split()[1]) == agent:
            return int(entry.name)
    raise RuntimeError("no ffmpeg under the agent")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--fps", type=int, default=12)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="holm-bench-recording-"))
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    proc, sock = start(tmp, "--display-base", DISPLAY_BASE, "--width", "1280", "--height", "800")
    try:
        desktop = await AgentDesktop.connect_when_up(sock, 20)
        await desktop.ready(60)
        await desktop.act(0, a.OpenUrl(url=MOVING))

        def click(i: int) -> object:
            return desktop.act(0, a.Click(at=Point(x=600 + i % 50, y=500)))

        before = await time_calls(args.rounds, click)
        started = r.expect(
            await desktop.act(0, a.Record(what=a.RecordWhat(do="start", fps=args.fps))),
            r.Recording,
        )
        ffmpeg = ffmpeg_pid(proc.pid)
        cpu0, wall0 = cpu_seconds(ffmpeg), time.monotonic()
        during = await time_calls(args.rounds, click)
        # At least 10 s of recording for the CPU figure, whatever the clicks took.
        await asyncio.sleep(max(0.0, 10 - (time.monotonic() - wall0)))
        share = (cpu_seconds(ffmpeg) - cpu0) / (time.monotonic() - wall0)
        stopped = r.expect(
            await desktop.act(0, a.Record(what=a.RecordWhat(do="stop"))), r.Recording
        )
        assert stopped.path is not None
        size = Path(stopped.path).stat().st_size
        seconds = ((stopped.stopped_at_ms or 0) - (started.started_at_ms or 0)) / 1000
        print(
            f"recording {started.width}x{started.height} at {args.fps} fps, animated page: "
            f"ffmpeg {share * 100:.0f}% of one core, {size / 1024 / seconds:.0f} KiB/s"
        )
        print(f"click round trip  before  p50 {ms(before, 0.5)}  p95 {ms(before, 0.95)}")
        print(f"                  during  p50 {ms(during, 0.5)}  p95 {ms(during, 0.95)}")
        await desktop.close()
    finally:
        stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
