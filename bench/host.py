"""A host full of boxes: what N Chromium boxes cost at once, idle and under many clients.

    .venv/bin/python bench/host.py [--boxes 40] [--clients 64 (0: idle only)] [--seconds 60]
        [--idle-seconds 30] [--load-boxes 32]

One holmd in its own process (bench/http_api.py's `served`: the local runtime and the
durable local store) fills this machine with `--boxes` boxes of the default spec (1280×800,
Chromium), each on a page of its own. Then, beside the figures of the run before
(bench/last_run.py):

1. memory: PSS per box (each box's share of the pages they all map, Chromium's binary above
   all) and in all, and holmd's own RSS;
2. idle: once the boxes have settled (below), the CPU of the whole host (/proc/stat) over
   `--idle-seconds` while every box shows its still page, as a share of one core, and that
   of holmd and the boxes alone; then what is not a box's: the few other processes that
   spent most (by name: another engineer's test, this bench itself), the kernel's threads,
   and the rest, from /proc/stat's own fields (interrupts, soft interrupts, time stolen
   by the hypervisor) and what no process still running accounts for;
3. load: `--clients` clients, each on one keep-alive connection of its own (the lean
   client, bench/lean_http.py, in a thread), spread over the first `--load-boxes` boxes,
   each looping click, type of 3 letters and a frame with `have` (the hash it saw last) for
   `--seconds`
   (bounded): recorded actions/s, p50/p99 per operation, errors, and the CPU split between
   holmd, the agents, Chromium and the X servers over that time.

Settling: a box is ready once its page is drawn, but Chromium goes on starting things for
a while after (its start-up tasks, a first look at its profile, the processes it starts
and ends), and with 40 boxes made two at a time the last boxes are seconds old when the
first are a minute old. So the idle figure waits until the boxes' own CPU, read over
SETTLE_WINDOW_S windows, stops falling (a window within SETTLE_SHARE of the one before),
and at most `--settle-seconds`; it prints how long that took and the windows' figures.

Every box it made is removed at the end (and `served` ends any a failed run left). Asserts
nothing; a figure of the run before was measured under that run's load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import threading
import time
from collections import defaultdict
from pathlib import Path

import box_memory
from http_api import CONFIRM, served
from last_run import keep, previous
from lean_http import LeanHttp
from proc_cpu import cpu_by_process

NAME = "host"
OPERATIONS = ("click", "type", "frame with have")
CREATE_AT_ONCE = 2
# The boxes have settled when their CPU over one window is within this share of the
# window before's (or under SETTLE_FLOOR percent of a core apart).
SETTLE_WINDOW_S = 5.0
SETTLE_SHARE = 0.1
SETTLE_FLOOR = 0.5
# How many of the other processes (not holmd's, not a box's) the idle figure names.
OTHERS_SHOWN = 4
PF_KTHREAD = 0x00200000


def page(n: int) -> str:
    # A page of its own per box: a title and a field, so a click and a type draw something.
    return f"data:text/html,<title>box {n}</title><h1>box {n}</h1><input autofocus size=40>"


def host_cpu_seconds() -> float:
    """CPU seconds the whole host spent (user, nice, system, irq, softirq, steal)."""
    return sum(host_cpu_fields().values())


def host_cpu_fields() -> dict[str, float]:
    """The CPU seconds the whole host spent so far, by /proc/stat's fields that are not
    idle: what processes ran (user, nice, system), interrupts (irq, softirq) and the
    time the hypervisor gave another guest (steal)."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    names = {"user": 0, "nice": 1, "system": 2, "irq": 5, "softirq": 6, "steal": 7}
    return {name: fields[at] / tick for name, at in names.items()}


def every_process() -> dict[int, tuple[str, bool, float]]:
    """Every process of the host: its name, whether it is a kernel thread, and its CPU
    seconds so far."""
    found: dict[int, tuple[str, bool, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                head, _, tail = stat.read().rpartition(")")
        except OSError:
            continue
        fields = tail.split()
        name = head.partition("(")[2]
        kernel = bool(int(fields[6]) & PF_KTHREAD)
        found[int(entry)] = (name, kernel, (int(fields[11]) + int(fields[12])) / tick)
    return found


def not_the_boxes(
    before: dict[int, tuple[str, bool, float]],
    after: dict[int, tuple[str, bool, float]],
    fields: dict[str, float],
    boxes: set[int],
    seconds: float,
) -> dict[str, float]:
    """The percent of one core spent by what is not holmd's nor a box's, split: the
    OTHERS_SHOWN other processes (by name) that spent most, the rest of them, the kernel's
    threads, interrupts, soft interrupts and steal (`fields`, /proc/stat's over the same
    time), and what none of these accounts for (processes that ended meanwhile)."""
    by_name: dict[str, float] = defaultdict(float)
    kernel = 0.0
    processes = 0.0
    for pid, (name, is_kernel, spent) in after.items():
        was = before.get(pid)
        ran = spent - (was[2] if was is not None and was[0] == name else 0.0)
        processes += ran
        if pid in boxes:
            continue
        if is_kernel:
            kernel += ran
        else:
            by_name["this bench" if pid == os.getpid() else name] += ran
    ranked = sorted(by_name.items(), key=lambda item: -item[1])
    split = {f"idle cpu not boxes: {name} %": ran for name, ran in ranked[:OTHERS_SHOWN]}
    split["idle cpu not boxes: other processes %"] = sum(r for _, r in ranked[OTHERS_SHOWN:])
    split["idle cpu not boxes: kernel threads %"] = kernel
    for name in ("irq", "softirq", "steal"):
        split[f"idle cpu not boxes: {name} %"] = fields[name]
    ran = fields["user"] + fields["nice"] + fields["system"]
    split["idle cpu not boxes: not accounted %"] = max(0.0, ran - processes)
    return {name: spent / seconds * 100 for name, spent in split.items()}


def kind_of(pid: int, holmd: int) -> str:
    """holmd, an agent, Chromium, an X server or the rest, by the process's command line."""
    if pid == holmd:
        return "holmd"
    name = box_memory.kind(pid)
    if name.startswith("Chromium"):
        return "chromium"
    if name == "agent (python)":
        return "agents"
    if name in ("Xvfb", "Xorg"):
        return "X servers"
    return "other box processes"


class Client:
    """One client on one box: a loop of click, type and unchanged frame until `deadline`."""

    def __init__(self, base: str, box: str, n: int) -> None:
        self.http = LeanHttp(base)
        self.box = box
        self.n = n
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.actions = 0

    def _timed(self, operation: str, method: str, path: str, body: object = None) -> bytes:
        began = time.perf_counter()
        status, answer = self.http.request(method, path, body)
        self.times[operation].append((time.perf_counter() - began) * 1000)
        if status != 200:
            self.errors.append(f"{operation}: {status} {answer[:200]!r}")
        return answer

    def run(self, deadline: float) -> None:
        actions = f"/v1/boxes/{self.box}/screens/0/actions"
        frame = f"/v1/boxes/{self.box}/screens/0/frame"
        x = 200 + (self.n * 37) % 800
        try:
            have = json.loads(self.http.request("GET", frame)[1])["hash"]
            while time.monotonic() < deadline:
                click = {"type": "click", "at": {"x": x, "y": 400 + self.n % 200}}
                self._timed("click", "POST", actions, {"actions": [click]})
                self._timed("type", "POST", actions, {"actions": [{"type": "type", "text": "abc"}]})
                self.actions += 2
                # `have` the hash this client saw last: the letters just typed make it a
                # new frame (a PNG) when Chromium has drawn them, else `unchanged`.
                answer = json.loads(self._timed("frame with have", "GET", f"{frame}?have={have}"))
                have = answer.get("hash", have)
        except OSError as exc:
            self.errors.append(f"connection: {exc}")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def fill(base: str, count: int) -> list[str]:
    """`count` boxes, each ready on its page, made CREATE_AT_ONCE at a time."""
    boxes: list[str] = []
    lock = threading.Lock()

    def make(numbers: list[int]) -> None:
        http = LeanHttp(base)
        for n in numbers:
            status, body = http.request("POST", "/v1/boxes", {})
            assert status == 200, body
            box = json.loads(body)["id"]
            step = {"type": "open_url", "url": page(n)}
            status, body = http.request(
                "POST", f"/v1/boxes/{box}/screens/0/actions", {"actions": [step]}
            )
            assert status == 200, body
            with lock:
                boxes.append(box)

    threads = [
        threading.Thread(target=make, args=(list(range(i, count, CREATE_AT_ONCE)),))
        for i in range(CREATE_AT_ONCE)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return boxes


def remove(base: str, boxes: list[str]) -> None:
    http = LeanHttp(base)
    for box in boxes:
        http.request("DELETE", f"/v1/boxes/{box}", extra=CONFIRM)


def memory(state_dir: Path, boxes: list[str], holmd: int) -> dict[str, float]:
    pss = 0
    for box in boxes:
        for pid in box_memory.box_pids(state_dir / "boxes", box):
            pss += box_memory.smaps_rollup(pid).get("pss", 0)
    with open(f"/proc/{holmd}/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return {"pss_per_box": pss / len(boxes) / 1024, "pss_all": pss / 1024, "holmd_rss": rss / 1024}


def spent_by_kind(
    before: dict[int, float], after: dict[int, float], holmd: int
) -> dict[str, float]:
    """The CPU seconds each kind of process (kind_of) spent between two cpu_by_process."""
    split: dict[str, float] = defaultdict(float)
    for pid, spent in after.items():
        split[kind_of(pid, holmd)] += spent - before.get(pid, 0.0)
    return dict(split)


def box_roots(state_dir: Path, boxes: list[str], holmd: int) -> list[int]:
    # A box outlives the server that made it, so its processes are not under holmd's.
    return [holmd] + [p for box in boxes for p in box_memory.box_pids(state_dir / "boxes", box)]


def idle(state_dir: Path, boxes: list[str], holmd: int, seconds: float) -> dict[str, float]:
    """The idle host's CPU over `seconds`, the share of each kind of box process, and what
    is not a box's, split (not_the_boxes)."""
    roots = box_roots(state_dir, boxes, holmd)
    before, host_before = cpu_by_process(roots), host_cpu_fields()
    all_before = every_process()
    time.sleep(seconds)
    after, host_after = cpu_by_process(roots), host_cpu_fields()
    all_after = every_process()
    fields = {name: host_after[name] - host_before[name] for name in host_after}
    split = {
        f"idle cpu {kind} %": spent / seconds * 100
        for kind, spent in spent_by_kind(before, after, holmd).items()
    }
    others = not_the_boxes(all_before, all_after, fields, set(after), seconds)
    return {"idle host cpu %": sum(fields.values()) / seconds * 100, **split, **others}


def settle(state_dir: Path, boxes: list[str], holmd: int, most_s: float) -> list[float]:
    """Wait until the boxes' CPU stops falling (module docstring), `most_s` at most; the
    percent of one core they used in each window."""
    roots = box_roots(state_dir, boxes, holmd)
    windows: list[float] = []
    began = time.monotonic()
    while time.monotonic() - began + SETTLE_WINDOW_S <= most_s:
        before = sum(cpu_by_process(roots).values())
        time.sleep(SETTLE_WINDOW_S)
        windows.append((sum(cpu_by_process(roots).values()) - before) / SETTLE_WINDOW_S * 100)
        if len(windows) >= 2:
            last, previous_window = windows[-1], windows[-2]
            if abs(previous_window - last) <= max(SETTLE_SHARE * previous_window, SETTLE_FLOOR):
                break
    return windows


def load(
    base: str, state_dir: Path, boxes: list[str], clients: int, seconds: float, holmd: int
) -> dict[str, float]:
    team = [Client(base, boxes[n % len(boxes)], n) for n in range(clients)]
    roots = box_roots(state_dir, boxes, holmd)
    cpu_before = cpu_by_process(roots)
    host_before = host_cpu_seconds()
    began = time.monotonic()
    deadline = began + seconds
    threads = [threading.Thread(target=c.run, args=(deadline,)) for c in team]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 120)
    took = time.monotonic() - began
    split = spent_by_kind(cpu_before, cpu_by_process(roots), holmd)
    figures: dict[str, float] = {
        "actions_per_s": sum(c.actions for c in team) / took,
        "errors": float(sum(len(c.errors) for c in team)),
        "host_cpu_percent": (host_cpu_seconds() - host_before) / took * 100,
    }
    for operation in OPERATIONS:
        times = [t for c in team for t in c.times[operation]]
        figures[f"{operation} p50"] = statistics.median(times) if times else float("nan")
        figures[f"{operation} p99"] = percentile(times, 0.99)
    for name, spent in split.items():
        figures[f"cpu {name} %"] = spent / took * 100
    # What each action cost each kind of process: the ceiling that kind alone sets on
    # actions/s is the host's cores (2,000 ms of CPU a second here) over its share.
    actions = sum(c.actions for c in team)
    for name, spent in split.items():
        figures[f"cpu ms per action, {name}"] = spent * 1000 / actions if actions else 0.0
    for c in team:
        for error in c.errors[:2]:
            print(f"  client {c.n}: {error}")
    return figures


def show(figures: dict[str, float], before: dict[str, float], unit: dict[str, str]) -> None:
    for name, value in figures.items():
        was = before.get(name)
        beside = "" if was is None else f"   (run before: {was:.1f})"
        print(f"  {name:40} {value:9.1f} {unit.get(name, '')}{beside}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boxes", type=int, default=40)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--load-boxes", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--idle-seconds", type=float, default=30)
    parser.add_argument(
        "--settle-seconds",
        type=float,
        default=90,
        help="at most this long for the boxes' CPU to stop falling before the idle figure",
    )
    args = parser.parse_args()
    before = previous(NAME)
    flags = ["--chromium", "--displays", str(args.boxes + 4)]
    with served("holm-bench-host-", flags) as (base, state_dir, holmd):
        began = time.monotonic()
        boxes = fill(base, args.boxes)
        try:
            ready_s = time.monotonic() - began
            print(
                f"{len(boxes)} boxes ready in {ready_s:.1f} s, {CREATE_AT_ONCE} created at a time"
            )
            settled = time.monotonic()
            windows = settle(state_dir, boxes, holmd, args.settle_seconds)
            shares = ", ".join(f"{w:.1f}" for w in windows)
            print(
                f"settled {time.monotonic() - settled:.0f} s after the last box was ready "
                f"(the boxes' % of a core over {SETTLE_WINDOW_S:.0f} s windows: {shares})"
            )
            figures = memory(state_dir, boxes, holmd)
            figures.update(idle(state_dir, boxes, holmd, args.idle_seconds))
            print(f"{len(boxes)} idle boxes:")
            show(figures, before, {"pss_per_box": "MiB", "pss_all": "MiB", "holmd_rss": "MiB"})
            if args.clients == 0:  # the idle host alone (kept for no run after it)
                return
            loaded = load(
                base, state_dir, boxes[: args.load_boxes], args.clients, args.seconds, holmd
            )
            driven = min(args.load_boxes, len(boxes))
            print(f"{args.clients} clients on {driven} boxes, {args.seconds:.0f} s:")
            show(loaded, before, {k: "ms" for k in loaded if k.endswith(("p50", "p99"))})
            keep(NAME, {**figures, **loaded, "ready_s": ready_s})
        finally:
            asyncio.run(asyncio.to_thread(remove, base, boxes))


if __name__ == "__main__":
    main()
