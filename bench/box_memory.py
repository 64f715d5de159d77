"""What an idle `local` box costs in memory: the PSS of each of its processes (from
/proc/PID/smaps_rollup), grouped by what they are, for this checkout beside another
revision's code, measured in turns in one run (`bench/local.py --memory`).

A box is every process under its outer bwrap (the sandbox, the agent and all it starts)
and its pasta. PSS shares each page among the processes that map it, so a box's figure
falls as more boxes (or other Chromiums) run beside it; USS (its private pages) falls too,
since a page of Chromium's binary that only one box maps is private until a second box
maps it. What does not depend on its neighbours is the boxes' own set of pages: each
physical page that any of their processes maps, counted once (read from /proc/PID/pagemap,
as root), which is what they would hold alone on the machine, less what they share with
the host's own processes. With `together` boxes side by side (`--together K`), every figure
is the boxes' sum divided by K: what a server running K boxes holds for each. Each more box
adds about its anonymous pages; the pages of files (Chromium's binary, libraries) are the
page cache, held once for all the boxes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from array import array
from pathlib import Path

from checkout import REPO, base_checkout, short

# The page the box shows: a still, simple one.
PAGE = "data:text/html,<title>Still</title><h1>A simple page</h1><p>Nothing moves here.</p>"
# How long the box stays idle on its page before it is measured: Chromium ends the
# processes it started for its start-up (and frees what they held) within a few seconds.
# `--idle 200` measures past what Chromium starts 3 minutes in (docs/agent.md, "Memory").
IDLE_S = 10.0
MACHINE_MIB = 24 * 1024
OWN = "(own pages)"
FIGURES = ("pss", "uss")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024
_PRESENT = 1 << 63
_FILE = 1 << 61
_FRAME = (1 << 55) - 1


def smaps_rollup(pid: int) -> dict[str, int]:
    """PSS and USS of one process, in KiB (nothing for a process that has ended)."""
    fields: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                name, _, value = line.partition(":")
                if value.strip().endswith("kB"):
                    fields[name] = int(value.split()[0])
    except OSError:
        return {}
    private = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return {"pss": fields.get("Pss", 0), "uss": private}


def frames(pid: int) -> tuple[set[int], set[int]]:
    """The physical pages that process `pid` maps: its anonymous ones and those of files
    (page cache, which the kernel can drop and read again), none for a process that has
    ended."""
    anonymous: set[int] = set()
    files: set[int] = set()
    page = PAGE_KIB * 1024
    try:
        with open(f"/proc/{pid}/smaps") as smaps, open(f"/proc/{pid}/pagemap", "rb", 0) as pagemap:
            span = (0, 0)
            for line in smaps:
                first = line.split(None, 1)[0]
                if not first.endswith(":"):
                    start, _, end = first.partition("-")
                    span = (int(start, 16), int(end, 16))
                elif first == "Rss:" and line.split()[1] != "0":
                    # Only mappings with pages in memory: most of Chromium's are reserved
                    # address space only.
                    pagemap.seek(span[0] // page * 8)
                    entries = array("Q", pagemap.read((span[1] - span[0]) // page * 8))
                    for e in entries:
                        if e & _PRESENT:
                            (files if e & _FILE else anonymous).add(e & _FRAME)
    except OSError:
        return set(), set()
    return anonymous, files


def kind(pid: int) -> str:
    """What a box's process is, by its command line."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [arg.decode(errors="replace") for arg in f.read().split(b"\0") if arg]
    except OSError:
        return "?"
    # Chromium rewrites its command line into one string.
    words = " ".join(argv).split()
    program = Path(words[0]).name if words else "?"
    flags = {w.partition("=")[0]: w.partition("=")[2] for w in words if w.startswith("--")}
    if program == "chrome_crashpad_handler":
        return "Chromium crashpad"
    if program == "chromium":
        role = flags.get("--type", "browser")
        if role == "utility":
            role = flags.get("--utility-sub-type", "utility").split(".")[0]
        if "--top-chrome-webui" in flags:
            role += " (browser UI)"
        return f"Chromium {role}"
    if program.startswith("python"):
        return "agent (python)"
    if program in ("dbus-daemon", "at-spi-bus-launcher", "at-spi2-registryd"):
        return "D-Bus / AT-SPI"
    if program in ("bwrap", "setpriv"):
        return "sandbox (bwrap)"
    names = {"tint2": "dock (tint2)", "pasta": "network (pasta)"}
    return names.get(program, program)


def box_pids(boxes_dir: Path, box_id: str) -> list[int]:
    from holm.adapters.local import procs
    from holm.adapters.local.records import BoxPaths, read_record

    record = read_record(BoxPaths(boxes_dir, box_id).record)
    pids: list[int] = []
    if record is None:
        return pids
    if record.bwrap_pid is not None and (stat := procs.read_stat(record.bwrap_pid)):
        pids += procs.tree(stat.pid, stat.start)
    if record.net_pid is not None:
        pids.append(record.net_pid)
    return pids


async def boxes(display_base: int, count: int, idle_s: float = IDLE_S) -> dict[str, dict[str, int]]:
    """Start `count` boxes of the default spec on PAGE side by side, let them idle, and
    measure them together: KiB of PSS and USS, and how many processes, by kind, summed over
    the boxes; their own pages counted once for all of them."""
    from holm.adapters.local.runtime import LocalRuntime
    from holm.wire.actions import OpenUrl
    from holm.wire.spec import Placement, Spec

    state = Path(tempfile.mkdtemp(prefix="holm-bench-mem-", dir="/tmp"))
    runtime = LocalRuntime(state / "boxes", "bench", display_base=display_base, display_count=20)
    box_ids = [f"box_memory_{uuid.uuid4().hex[:8]}" for _ in range(count)]
    try:
        for box_id in box_ids:
            # The runtime fills in the default features (dock, accessibility, …).
            await runtime.create(box_id, Spec(), Placement())
            desktop = await runtime.desktop(box_id)
            await desktop.act(0, OpenUrl(url=PAGE))
        await asyncio.sleep(idle_s)
        groups: dict[str, dict[str, int]] = {}
        anonymous: set[int] = set()
        files: set[int] = set()
        for pid in [p for box_id in box_ids for p in box_pids(runtime.boxes_dir, box_id)]:
            figures = smaps_rollup(pid)
            if figures:
                group = groups.setdefault(kind(pid), {"pss": 0, "uss": 0, "n": 0})
                group["n"] += 1
                for name in FIGURES:
                    group[name] += figures[name]
                mine, cached = frames(pid)
                anonymous |= mine
                files |= cached
        # Not a kind of process: the boxes' own pages (the report leaves it out of the sums
        # of the kinds).
        groups[OWN] = {
            "pss": 0,
            "uss": 0,
            "n": 0,
            "anon": len(anonymous) * PAGE_KIB,
            "file": len(files) * PAGE_KIB,
        }
        return groups
    finally:
        for box_id in box_ids:
            with contextlib.suppress(Exception):
                await runtime.delete(box_id)
        await runtime.close()
        shutil.rmtree(state, ignore_errors=True)


def measure_in(
    code: str, display_base: int, together: int, idle_s: float
) -> dict[str, dict[str, int]]:
    """`together` boxes started by the code in folder `code` (its `holm` package), in a
    process of its own: the boxes' agents and programs come from that code."""
    env = {**os.environ, "PYTHONPATH": code}
    bench = Path(__file__).parent / "local.py"
    answer = subprocess.run(
        [
            sys.executable,
            str(bench),
            "--memory-box",
            str(display_base),
            "--together",
            str(together),
            "--idle",
            str(idle_s),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if answer.returncode != 0:
        raise SystemExit(f"a box of {code} failed:\n{answer.stderr[-3000:]}")
    groups: dict[str, dict[str, int]] = json.loads(answer.stdout.splitlines()[-1])
    return groups


def mib(kib: float) -> str:
    return f"{kib / 1024:7.1f}"


def compare(base: str, rounds: int, display_base: int, together: int, idle_s: float) -> None:
    """Boxes of REV `base` and of this checkout, in turns, `rounds` of each, `together`
    boxes at a time; the median of each figure per box, side by side."""
    rev = short(base)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average before: {load} ({os.cpu_count()} cpus; others' work counts in it)")
    runs: dict[str, list[dict[str, dict[str, int]]]] = {}
    with tempfile.TemporaryDirectory(prefix="holm-base-") as old:
        base_checkout(rev, Path(old))
        sides = {f"base {rev}": old, "this checkout": str(REPO)}
        for _ in range(rounds):
            for side, code in sides.items():
                runs.setdefault(side, []).append(measure_in(code, display_base, together, idle_s))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average after:  {load}")
    report(runs, rounds, together, idle_s)


def report(
    runs: dict[str, list[dict[str, dict[str, int]]]], rounds: int, together: int, idle_s: float
) -> None:
    sides = list(runs)
    kinds = sorted({k for side in sides for run in runs[side] for k in run} - {OWN})

    def median(side: str, name: str, of: str | None = None) -> float:
        """Per box: the boxes measured together share it."""
        values = [
            sum(g[name] for k, g in run.items() if of is None or k == of) for run in runs[side]
        ]
        return statistics.median(values) / together

    what = "alone" if together == 1 else f"per box, {together} boxes side by side"
    print(f"an idle box (default spec: 1280x800, Chromium on a still page), {what}")
    print(f"measured after {idle_s:.0f} s idle on its page")
    print(f"median of {rounds}")
    head = "".join(f"{side:>26}" for side in sides)
    print(f"{'PSS MiB (processes)':<32}{head}")
    for k in [*kinds, None]:
        cells = "".join(
            f"{mib(median(side, 'pss', k)):>18} ({median(side, 'n', k):3.0f})  " for side in sides
        )
        print(f"  {k or 'whole box':<30}{cells}")
    chromium = "".join(
        f"{mib(sum(median(side, 'pss', k) for k in kinds if k.startswith('Chromium'))):>26}"
        for side in sides
    )
    print(f"  {'of it, Chromium':<30}{chromium}")
    uss = "".join(f"{mib(median(side, 'uss')):>26}" for side in sides)
    print(f"{'USS MiB, whole box':<32}{uss}")
    for name, what in (("anon", "anonymous"), ("file", "of files")):
        own = "".join(f"{mib(median(side, name, OWN)):>26}" for side in sides)
        print(f"{f'own pages MiB, {what}':<32}{own}")
    per_pss = "".join(f"{MACHINE_MIB * 1024 / median(side, 'pss'):>26.0f}" for side in sides)
    per_uss = "".join(f"{MACHINE_MIB * 1024 / median(side, 'uss'):>26.0f}" for side in sides)
    own = "".join(
        f"{MACHINE_MIB * 1024 / (median(side, 'anon', OWN) + median(side, 'file', OWN)):>26.0f}"
        for side in sides
    )
    print(f"{'boxes per 24 GiB, by PSS':<32}{per_pss}")
    print(f"{'  by own pages':<32}{own}")
    print(f"{'  by USS':<32}{per_uss}")
