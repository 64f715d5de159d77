"""The CPU time of process trees, from /proc: what a box (and holmd) costs while idle."""

from __future__ import annotations

import os


def cpu_seconds(roots: list[int]) -> tuple[float, int]:
    """The CPU time of the processes `roots` and every process under them, and how many
    they are."""
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
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo += children.get(pid, [])
    total = sum(ticks.get(pid, 0) for pid in seen)
    return total / os.sysconf("SC_CLK_TCK"), len(seen)
