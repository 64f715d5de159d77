"""The CPU time of process trees, from /proc: what a box (and holmd) costs while idle, and
what each process of it spends on a request."""

from __future__ import annotations

import asyncio
import os


def cpu_by_process(roots: list[int]) -> dict[int, float]:
    """The CPU seconds of the processes `roots` and of every process under them, by pid."""
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        ticks[int(entry)] = int(fields[11]) + int(fields[12])
    seen: dict[int, float] = {}
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen[pid] = ticks.get(pid, 0) / os.sysconf("SC_CLK_TCK")
            todo += children.get(pid, [])
    return seen


def cpu_seconds(roots: list[int]) -> tuple[float, int]:
    """The CPU time of the processes `roots` and every process under them, and how many
    they are."""
    seen = cpu_by_process(roots)
    return sum(seen.values()), len(seen)


async def share_of_a_core(roots: list[int], seconds: float) -> tuple[float, int]:
    """The percent of one core that the processes `roots` and every process under them
    used over the next `seconds`, and how many they were at the end."""
    before, _ = cpu_seconds(roots)
    await asyncio.sleep(seconds)
    after, processes = cpu_seconds(roots)
    return (after - before) / seconds * 100, processes


def cpu_by_thread(pids: list[int]) -> dict[tuple[int, int], tuple[str, float]]:
    """The CPU seconds of each live thread of the processes `pids` (from
    /proc/PID/task/TID/schedstat, in nanoseconds, where /proc's ticks are 10 ms), by (pid,
    tid), with the thread's name (Chromium names its threads: CrBrowserMain,
    VizCompositorTh, Chrome_IOThread, Compositor, …). A thread that ended is not there: a
    process's own total is cpu_by_process's."""
    threads: dict[tuple[int, int], tuple[str, float]] = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as comm:
                    name = comm.read().strip()
                with open(f"/proc/{pid}/task/{tid}/schedstat") as schedstat:
                    ran = int(schedstat.read().split()[0]) / 1e9
            except (OSError, ValueError, IndexError):
                continue
            threads[pid, int(tid)] = (name, ran)
    return threads
