"""The plainest REST actions on a Chromium screen, and where a click's time goes; prints
figures, asserts nothing.

    .venv/bin/python bench/click_path.py [--rounds 300] [--against DIR | --step-frames]

holmd runs in its own process (bench/http_api.py's `served`, durable local store) with one
box showing a page with a text field; the client sends, one at a time on one keep-alive
connection, batches of one `move`, one `click` and one `type` of 10 characters, each kind
in a series of its own, then a `type` right after a click (which waits for the click to
land), then unchanged frames (`GET …/frame?have=`), and prints each one's p50 and p95
(targets: move ≤ 1 ms, click ≤ 2 ms, type ≤ 3 ms, unchanged frame ≤ 1 ms), with holmd's
timers (bench/breakdown.py) off. Each request is sent twice, by two clients in turns: a
lean one (bench/lean_http.py: a blocking socket, about 30 µs of Python a request), whose
figures are what holmd answers in, and aiohttp's, which spends about 0.5 ms of its own on
each. Then the breakdown of as many clicks again, timed inside holmd, and the CPU each
process spent per timed click: holmd, and its box's agent, Chromium, Xvfb and the rest
(from /proc), and each client per request. With
`--pause-ms`, that also holds what they did while idle between the clicks. Last, this
machine's floors: a Unix socket round trip between two processes and a small append with
its fdatasync, back to back and after the pause.

With `--pause-ms MS`, each request comes MS after the last answer, as from an agent that
thinks between steps: the box has drawn the last step's answer by then (and with
`--against`, the other side's box has too), and the machine is idle when the request comes,
which on this machine's VMs makes every wake-up of a thread or process dearer (a GET of
`/v1/health` took 0.33 ms back to back and 1.1 ms after 60 ms of rest).

With `--against DIR`, a second holmd runs the code of the checkout DIR (e.g. a git worktree
of main: `git worktree add /tmp/before main`) with a box of its own, and every round goes
to both, in turns that swap each round, so that both see the same load: the figures of the
two columns are comparable, whatever else the machine is doing. With `--block N`, a side
runs N rounds before the other's turn: the side that waits has a still page by then, and
the figures of each are those of one box alone.

With `--step-frames`, the second holmd is this checkout's too, with
`HOLM_FRAME_BEFORE_STEPS=off`: the first looks at the screen before each step and records
it when it changed (engine/step_frames.py), the second does not, and the report adds each
kind's ratio of p50s and a click on a changed screen (a letter typed and drawn just before:
the look finds it and records a frame, its PNG encoded and stored before the step's entry).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import socket
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import box_memory
from http_api import CONFIRM, add_against, percentile, served, served_sides
from lean_http import LeanHttp
from proc_cpu import cpu_by_process
from store import fsync_latency_ms

PAGE = (
    "data:text/html,<title>bench</title>"
    "<textarea style='position:fixed;inset:0;width:100%;height:100%'></textarea>"
)
# Inside the text field, below Chromium's toolbar.
AT = (400, 400)
UNCHANGED = "frame, unchanged (have)"
# Sent right after an untimed click: keys wait for the click to land (docs/agent.md, Input).
AFTER_CLICK = "type right after a click"
# Sent once a letter typed just before is drawn: the screen changed since the last frame the
# trace has, which the look before the step records (engine/step_frames.py).
ON_CHANGED = "click on a changed screen"
# What the CPU figures are grouped by (box_memory.kind names each process of a box).
CPU_GROUPS = ("holmd", "agent", "Chromium", "Xvfb", "the box's other processes")
# The two clients every timed request is sent by, in turns.
LEAN, AIOHTTP = "lean client", "aiohttp client"
CLIENTS = (LEAN, AIOHTTP)
# The two sides of `--step-frames`.
WITH, WITHOUT = "look before each step", "without (HOLM_FRAME_BEFORE_STEPS=off)"
# Time for Chromium to paint a typed letter before its frame is asked for.
PAINTED_S = 0.1


def _cpu_group(what: str) -> str:
    for group in ("agent", "Chromium", "Xvfb"):
        if what.startswith(group):
            return group
    return CPU_GROUPS[-1]


def actions(n: int) -> dict[str, dict[str, Any]]:
    x, y = AT[0] + n % 100, AT[1] + n % 50
    typed = {"type": "type", "text": "abcdefghij"}
    return {
        "move": {"type": "move", "to": {"x": x, "y": y}},
        "click": {"type": "click", "at": {"x": x, "y": y}},
        "type": typed,
        AFTER_CLICK: typed,
        ON_CHANGED: {"type": "click", "at": {"x": x, "y": y}},
    }


class Side:
    """One holmd and its box."""

    def __init__(self, name: str, base: str, pid: int, session: aiohttp.ClientSession) -> None:
        self.name = name
        self.base = base
        self.pid = pid
        self.session = session
        self.box = ""
        self.lean = LeanHttp(base)
        self.timeline: dict[str, Any] = {}
        self.times: dict[tuple[str, str], list[float]] = {
            (kind, client): [] for kind in [*actions(0), UNCHANGED] for client in CLIENTS
        }
        # CPU seconds this process spent in each client's timed requests.
        self.client_cpu: dict[str, float] = dict.fromkeys(CLIENTS, 0.0)
        self.cpu: dict[str, float] = {}

    def cpu_now(self) -> dict[str, float]:
        """CPU seconds so far of holmd and of its box's processes, by what they are."""
        spent: dict[str, float] = {}
        for pid, seconds in cpu_by_process([self.pid]).items():
            what = "holmd" if pid == self.pid else _cpu_group(box_memory.kind(pid))
            spent[what] = spent.get(what, 0.0) + seconds
        return spent

    async def batch(self, *steps: dict[str, Any], client: str = AIOHTTP) -> Any:
        path = f"/v1/boxes/{self.box}/screens/0/actions"
        if client == LEAN:
            return self.lean.json("POST", path, {"actions": list(steps)})
        async with self.session.post(self.base + path, json={"actions": list(steps)}) as response:
            body = await response.json()
            assert response.status == 200, body
        return body

    async def frame(self, have: str | None = None, client: str = AIOHTTP) -> Any:
        path = f"/v1/boxes/{self.box}/screens/0/frame"
        if client == LEAN:
            return self.lean.json("GET", path if have is None else f"{path}?have={have}")
        params = {} if have is None else {"have": have}
        async with self.session.get(self.base + path, params=params) as response:
            return await response.json()

    async def start(self) -> None:
        async with self.session.post(f"{self.base}/v1/boxes", json={}) as response:
            created = await response.json()
            assert response.status == 200, created
        self.box = created["id"]
        await self.batch({"type": "open_url", "url": PAGE})
        await self.batch({"type": "click", "at": {"x": AT[0], "y": AT[1]}})

    async def timed(self, kind: str, n: int, keep: bool, clients: Sequence[str] = CLIENTS) -> None:
        """One `kind` sent by each client, in an order that swaps each round."""
        for client in clients if n % 2 else clients[::-1]:
            if kind == AFTER_CLICK:
                await self.batch(actions(n)["click"], client=client)
            if kind == ON_CHANGED:
                await self.batch({"type": "type", "text": "x"}, client=client)
                await asyncio.sleep(PAINTED_S)
            began, cpu = time.perf_counter(), time.process_time()
            await self.batch(actions(n)[kind], client=client)
            if keep:
                self.times[kind, client].append((time.perf_counter() - began) * 1000)
                self.client_cpu[client] += time.process_time() - cpu

    async def unchanged_frame(self, n: int, keep: bool, clients: Sequence[str] = CLIENTS) -> None:
        """An unchanged frame (`have` the hash just read) by each client; a screen still
        settling after the last action gives no figure."""
        for client in clients if n % 2 else clients[::-1]:
            have = (await self.frame(client=client))["hash"]
            began = time.perf_counter()
            answer = await self.frame(have, client=client)
            if keep and answer.get("unchanged"):
                self.times[UNCHANGED, client].append((time.perf_counter() - began) * 1000)

    async def painted_frame(self, client: str) -> float:
        """Ms to get a PNG frame of the screen once a letter typed into the page is drawn."""
        await self.batch({"type": "type", "text": "x"}, client=client)
        await asyncio.sleep(PAINTED_S)
        began = time.perf_counter()
        assert (await self.frame(client=client))["png_base64"]
        return (time.perf_counter() - began) * 1000

    async def breakdown(self, clicks: int = 1, timers: bool = True) -> dict[str, Any]:
        """What each part spent per click, and when (bench/breakdown.py), since the last
        read; holmd's timers on or off after."""
        query = {"clicks": clicks, "on": int(timers)}
        async with self.session.get(f"{self.base}/bench/breakdown", params=query) as response:
            parts: dict[str, Any] = await response.json()
        async with self.session.get(f"{self.base}/bench/timeline") as response:
            # Older code (--against) may serve no timeline.
            self.timeline = await response.json() if response.status == 200 else {}
        return parts

    async def end(self) -> None:
        self.lean.close()
        if self.box:
            url = f"{self.base}/v1/boxes/{self.box}"
            async with self.session.delete(url, headers=CONFIRM):
                pass


# Rounds one side runs before the other takes its turn (`--block`).
BLOCK = [1]


async def rounds(
    sides: list[Side], kinds: list[str], count: int, warm: int, pause_s: float = 0.0
) -> None:
    block = BLOCK[0]
    for first in range(0, warm + count, block):
        # Each turn in the other order: neither side always runs right after the other.
        for side in sides if (first // block) % 2 else sides[::-1]:
            for n in range(first, min(first + block, warm + count)):
                for kind in kinds:
                    if pause_s:
                        await asyncio.sleep(pause_s)
                    await side.timed(kind, n, n >= warm)


async def bench(args: argparse.Namespace, served: list[tuple[str, str, int]]) -> None:
    async with aiohttp.ClientSession() as session:
        sides = [Side(name, base, pid, session) for name, base, pid in served]
        try:
            for side in sides:
                await side.start()
            # The clicks alone first, for a breakdown of clicks only: timed inside holmd
            # (bench/breakdown.py), then sent again with its timers off for the figures.
            await rounds(sides, ["click"], 0, 50)
            for side in sides:
                await side.breakdown()
            pause = args.pause_ms / 1000
            await rounds(sides, ["click"], 0, args.rounds, pause)
            # Each round's click goes once by each client.
            clicks = args.rounds * len(CLIENTS)
            parts = [await side.breakdown(clicks, timers=False) for side in sides]
            before = [side.cpu_now() for side in sides]
            await rounds(sides, ["click"], args.rounds, 0, pause)
            for side, was in zip(sides, before, strict=True):
                now = side.cpu_now()
                side.cpu = {k: (now[k] - was.get(k, 0.0)) / clicks for k in now}
                for client in CLIENTS:
                    side.cpu[client] = side.client_cpu[client] / args.rounds
            for kind in ("move", "type", AFTER_CLICK):
                await rounds(sides, [kind], args.rounds, 20, pause)
            if args.step_frames:
                # Fewer: each waits for a letter to be drawn first.
                await rounds(sides, [ON_CHANGED], max(20, args.rounds // 5), 5)
            for n in range(args.rounds + 20):
                for side in sides if n % 2 else sides[::-1]:
                    await side.unchanged_frame(n, n >= 20)
            report(sides, parts)
        finally:
            for side in sides:
                await side.end()


def report(sides: list[Side], parts: list[dict[str, Any]]) -> None:
    names = "".join(f"{side.name:>24}" for side in sides)
    print(f"\nREST on a Chromium screen, p50 / p95 ms, one request at a time{'':6}{names}")
    for kind, client in sides[0].times:
        if not any(s.times[kind, client] for s in sides):
            continue  # a kind this run did not send (ON_CHANGED without --step-frames)
        cells = "".join(
            f"{statistics.median(t):>15.2f} / {percentile(t, 0.95):5.2f}"
            for t in (s.times[kind, client] or [float("nan")] for s in sides)
        )
        label = f"{kind.replace('type', 'type 10 characters', 1)}, {client}"
        print(f"  {label:64}{cells}")
    print("  (a frame counts only when it was unchanged: a screen still settling gives none)")
    if len(sides) == 2 and sides[1].name == WITHOUT:
        _ratios(sides)
    print(f"\nwhere one click's time goes inside holmd, ms per click (calls){'':7}{names}")
    for part in sorted({name for p in parts for name in p}):
        cells = ""
        for p in parts:
            got = p.get(part)
            cells += (
                f"{got['ms_per_click']:>16.3f} ({got['calls_per_click']:4.2f})"
                if got
                else f"{'-':>24}"
            )
        print(f"  {part:64}{cells}")
    print(f"\nCPU per click, ms, by process (the timed clicks){'':22}{names}")
    for group in (*CPU_GROUPS, *CLIENTS):
        cells = "".join(f"{s.cpu.get(group, 0.0) * 1000:>24.2f}" for s in sides)
        label = f"this process, {group}, per request" if group in CLIENTS else group
        print(f"  {label:64}{cells}")
    for side in sides:
        if not side.timeline:
            continue
        print(
            f"\n{side.name}: when each part of a click began and ended, ms after its request "
            f"began (median of {side.timeline['batches']} clicks; in how many it came)"
        )
        for row in side.timeline["moments"]:
            some = "" if row["of"] == side.timeline["batches"] else f"  ({row['of']})"
            print(f"  {row['ms']:7.3f}  {row['moment']}{some}")
    print(f"load average after: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def _ratios(sides: list[Side]) -> None:
    """`--step-frames`: each kind's p50 with the look before each step over its p50
    without it, in the same run."""
    print(
        f"\nwith the look before each step / without it, ratio of p50s{'':8}"
        f"{'lean':>12}{'aiohttp':>12}"
    )
    for kind in ("click", "type", AFTER_CLICK, ON_CHANGED):
        cells = ""
        for client in CLIENTS:
            with_, without = sides[0].times[kind, client], sides[1].times[kind, client]
            ratio = (
                statistics.median(with_) / statistics.median(without)
                if with_ and without
                else float("nan")
            )
            cells += f"{ratio:>12.2f}"
        print(f"  {kind:64}{cells}")


def floors(pause_s: float, rounds: int = 300) -> None:
    """What this machine gives before any Python: a round trip of a few bytes between two
    processes over a Unix socket (what a wake-up of another process costs), and a small
    append with its fdatasync on the disk the store uses (bench/store.py's probe); each
    back to back and after the bench's pause (60 ms at least: a rest as an agent's)."""
    sock, other = socket.socketpair()
    child = os.fork()
    if child == 0:
        sock.close()
        while data := other.recv(64):
            other.send(data)
        os._exit(0)
    other.close()
    folder = Path(tempfile.mkdtemp(prefix="h5c-floor-", dir="/tmp"))

    def round_trip_ms(pause: float) -> float:
        times = []
        for _ in range(rounds):
            time.sleep(pause)
            began = time.perf_counter()
            sock.send(b"x" * 32)
            sock.recv(64)
            times.append((time.perf_counter() - began) * 1000)
        return statistics.median(times)

    rest = max(pause_s, 0.06)
    try:
        after = f"after {rest * 1000:.0f} ms"
        print(f"\nthis machine's floors, p50 ms        back to back{after:>18}")
        for name, median_ms in (
            ("Unix socket round trip", round_trip_ms),
            ("small append + fdatasync", lambda p: fsync_latency_ms(folder, p, rounds)),
        ):
            print(f"  {name:34}{median_ms(0.0):>16.3f}{median_ms(rest):>16.3f}")
    finally:
        sock.close()
        os.waitpid(child, 0)
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument(
        "--pause-ms",
        type=float,
        default=0.0,
        help="a pause before each request, as an agent thinks between steps: each box's "
        "Chromium is done drawing the last step's answer, so one side's drawing does not "
        "land in the other's figures",
    )
    parser.add_argument(
        "--block",
        type=int,
        default=1,
        help="with --against, rounds a side runs before the other's turn (default 1): in "
        "blocks, the side that waits has a still page, so the other's figures hold none of "
        "its Chromium's drawing",
    )
    add_against(parser)
    parser.add_argument(
        "--step-frames",
        action="store_true",
        help="instead of --against, a second holmd of this checkout with "
        "HOLM_FRAME_BEFORE_STEPS=off beside this one (the look before each step on), and "
        "the ratio of each kind's p50s; adds a click on a changed screen",
    )
    args = parser.parse_args()
    BLOCK[0] = max(1, args.block)
    flags = ["--chromium", "--breakdown"]
    with contextlib.ExitStack() as stack:
        if args.step_frames:
            sides = served_sides(stack, "h5c-bench-", flags, None)
            _, base, pid = sides[0]
            sides[0] = (WITH, base, pid)
            base, _, pid = stack.enter_context(
                served("h5c-bench-", [*flags, "--no-frame-before-steps"])
            )
            sides.append((WITHOUT, base, pid))
        else:
            sides = served_sides(stack, "h5c-bench-", flags, args.against)
        asyncio.run(bench(args, sides))
    floors(args.pause_ms / 1000, rounds=min(args.rounds, 100))


if __name__ == "__main__":
    main()
