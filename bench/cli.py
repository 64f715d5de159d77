"""What the client and the CLI cost: a `holm` process's start, a command's round trip, and
the client's calls on one box of a real holmd (local runtime, started here the way the
tests start it, on displays :260 to :279).

    .venv/bin/python bench/cli.py [--rounds N]

Prints the median and the 90th percentile of each, in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

_HERE = Path(__file__).resolve().parent
# This folder's http.py and docker.py would stand in for the stdlib's `http` and the SDK.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent / "tests" / "cli"))

from e2e_kit import HOLM, Holmd  # noqa: E402

from holm.client import HolmClient, SyncHolmClient  # noqa: E402
from holm.wire.actions import Move  # noqa: E402
from holm.wire.values import Point  # noqa: E402


def report(name: str, times_s: list[float]) -> None:
    ms = sorted(t * 1000 for t in times_s)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    print(f"{name:<42} median {statistics.median(ms):8.1f} ms   p90 {p90:8.1f} ms   n={len(ms)}")


def timed_process(args: list[str], env: dict[str, str], rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([str(HOLM), *args], env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return times


async def timed_calls(call: Callable[[], Awaitable[object]], rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return times


async def client_figures(server: Holmd, box: str, rounds: int) -> None:
    async with HolmClient(server.url, server.token) as client:
        await client.health()
        report("client: health", await timed_calls(client.health, rounds))
        report("client: get_box", await timed_calls(lambda: client.get_box(box), rounds))
        move = [Move(to=Point(x=100, y=100))]
        report("client: act (one move)", await timed_calls(lambda: client.act(box, move), rounds))
        report("client: frame (PNG)", await timed_calls(lambda: client.frame(box), rounds))
        same = (await client.frame(box)).hash
        report(
            "client: frame (have, unchanged)",
            await timed_calls(lambda: client.frame(box, have=same), rounds),
        )
        report("client: exec true", await timed_calls(lambda: client.exec(box, ["true"]), rounds))


def sync_figures(server: Holmd, box: str, rounds: int) -> None:
    with SyncHolmClient(server.url, server.token) as client:
        client.health()
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            client.get_box(box)
            times.append(time.perf_counter() - start)
        report("sync client: get_box", times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    rounds = parser.parse_args().rounds
    server = Holmd()
    server.start()
    try:
        env = {"PATH": "/usr/bin:/bin", **server.client_env}
        report("holm --version (process start)", timed_process(["--version"], env, rounds))
        report("holm ls (process, one request)", timed_process(["ls", "-q"], env, rounds))
        box = server.create()
        report(
            "holm exec BOX -- true (process)",
            timed_process(["exec", box, "--", "true"], env, rounds),
        )
        asyncio.run(client_figures(server, box, rounds))
        sync_figures(server, box, rounds)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
