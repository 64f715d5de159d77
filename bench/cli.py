"""What the client and the CLI cost: a `holm` process's start, a command's round trip, and
the client's calls on one box of a real holmd (local runtime, started here the way the
tests start it, on displays :260 to :279).

    .venv/bin/python bench/cli.py [--rounds N]
    .venv/bin/python bench/cli.py --startup [--base REV] [--rounds N]

Prints the median and the 90th percentile of each, in milliseconds. `--startup` prints only
the start of `holm --help`, `holm trace FILE.jsonl` and `holm ls` to a port nothing
listens on, for this checkout beside the code of REV (default: where this branch left
main), both run by the same console script in turns, under the load average it prints.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

_HERE = Path(__file__).resolve().parent
# This folder's http.py and docker.py would stand in for the stdlib's `http` and the SDK.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent / "tests"))

from kits.holmd import HOLM, Holmd  # noqa: E402

# After the standard library's folders, so that only names it lacks come from here.
sys.path.append(str(_HERE))
from checkout import base_checkout, merge_base, short  # noqa: E402

from holm.cli.remote import EXIT_UNREACHABLE  # noqa: E402
from holm.client import HolmClient, SyncHolmClient  # noqa: E402
from holm.wire.actions import Move  # noqa: E402
from holm.wire.values import Point  # noqa: E402


def report(name: str, times_s: list[float]) -> None:
    ms = sorted(t * 1000 for t in times_s)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    print(f"{name:<48} median {statistics.median(ms):8.1f} ms   p90 {p90:8.1f} ms   n={len(ms)}")


def timed_process(args: list[str], env: dict[str, str], rounds: int) -> list[float]:
    return [one_process(args, env) for _ in range(rounds)]


def one_process(args: list[str], env: dict[str, str]) -> float:
    return cpu_and_wall(args, env)[1]


def cpu_and_wall(
    args: list[str], env: dict[str, str], codes: tuple[int, ...] = (0,)
) -> tuple[float, float]:
    """A process's CPU time (user + system: what load changes least) and wall time; it
    must end with one of `codes`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([str(HOLM), *args], env=env, capture_output=True, check=False)
    assert done.returncode in codes, done.stderr
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def startup_figures(base: str, rounds: int) -> None:
    repo = _HERE.parent
    rev = short(base)
    trace_file = repo / "fixtures" / "traces" / "spec_example.jsonl"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        nobody = f"http://127.0.0.1:{probe.getsockname()[1]}"
    # `holm ls` to a port nothing listens on: the start of a command that talks to a
    # server (its client imported, a connection refused), which then exits with 14.
    commands = {
        "holm --help": (["--help"], 0),
        "holm trace FILE.jsonl": (["trace", str(trace_file)], 0),
        "holm ls, no server there": (["ls", "--url", nobody], EXIT_UNREACHABLE),
    }
    with tempfile.TemporaryDirectory(prefix="holm-base-") as old:
        base_checkout(rev, Path(old))
        trees = {f"base {rev}": old, "this checkout": str(repo)}
        times: dict[tuple[str, str, str], list[float]] = {}
        print(f"load average before: {_load()}  ({os.cpu_count()} cores)")
        for _ in range(rounds):
            # In turns, so that both see the same load.
            for name, (args, code) in commands.items():
                for tree, path in trees.items():
                    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": path}
                    cpu, wall = cpu_and_wall(args, env, codes=(code,))
                    times.setdefault((name, tree, "wall"), []).append(wall)
                    times.setdefault((name, tree, "cpu"), []).append(cpu)
        for name in commands:
            for tree in trees:
                for what in ("wall", "cpu"):
                    report(f"{name} {what} ({tree})", times[name, tree, what])
        print(f"load average after:  {_load()}")


def _load() -> str:
    return " ".join(f"{figure:.2f}" for figure in os.getloadavg())


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
    parser.add_argument("--startup", action="store_true", help="Only the start figures.")
    parser.add_argument("--base", help="The code to compare the start with (a git revision).")
    options = parser.parse_args()
    rounds = options.rounds
    base = options.base or merge_base()
    startup_figures(base, rounds)
    if options.startup:
        return
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
        server.close()


if __name__ == "__main__":
    main()
