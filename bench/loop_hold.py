"""How long the running event loop is held up, and by what.

A ticker on the loop asks to wake every millisecond; how late it wakes is how long every
other request on that loop waited. A late wake-up is split three ways, from the loop
thread's own clocks over the tick:

- **on the loop**: CPU the loop's thread spent (`time.thread_time()`): callbacks that ran
  long, work done on the loop instead of a thread;
- **waiting for a core**: time the thread was runnable and not run, the kernel's
  `run_delay` of `/proc/self/task/<tid>/schedstat` (the host's other processes had both
  cores);
- **asleep**: the rest, neither running nor runnable: the thread waited for the GIL (held
  by one of holmd's threads) or in a blocking call made on the loop.

Where the kernel keeps no schedstat, waiting and asleep are one figure ("off the loop").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

# Holds longer than this are summed by kind (the goal: the loop never held up longer).
HELD_S = 0.020


@dataclass
class Hold:
    """A late wake-up (seconds past due) and what its tick was made of."""

    late: float = 0.0
    on_loop: float = 0.0
    waiting: float | None = 0.0
    asleep: float = 0.0

    def add(self, other: Hold) -> None:
        self.late += other.late
        self.on_loop += other.on_loop
        self.asleep += other.asleep
        if self.waiting is not None and other.waiting is not None:
            self.waiting += other.waiting
        else:
            self.waiting = None

    def split(self) -> str:
        """`late` as its parts, in ms."""
        parts = [f"{self.on_loop * 1000:.1f} on the loop"]
        if self.waiting is None:
            parts.append(f"{self.asleep * 1000:.1f} off it")
        else:
            parts.append(f"{self.waiting * 1000:.1f} waiting for a core")
            parts.append(f"{self.asleep * 1000:.1f} asleep (GIL or a blocking call)")
        return ", ".join(parts)


@dataclass
class LoopLag:
    """The latest a ticker on the running loop woke (`most`, seconds past its time), the
    split of that worst hold, and the sum of every hold over `HELD_S` by kind."""

    TICK_S = 0.001

    most: float = 0.0
    worst: Hold = field(default_factory=Hold)
    over: Hold = field(default_factory=Hold)
    holds_over: int = 0
    # Over the whole window: its length, the CPU of the loop's thread and of the process.
    wall: float = 0.0
    loop_cpu: float = 0.0
    process_cpu: float = 0.0
    _task: asyncio.Task[None] | None = None
    _began: tuple[float, float, float] = (0.0, 0.0, 0.0)

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        with _schedstat() as run_delay:
            while True:
                began, cpu, delay = loop.time(), time.thread_time(), run_delay()
                due = began + self.TICK_S
                await asyncio.sleep(self.TICK_S)
                woke = loop.time()
                late = woke - due
                on_loop = time.thread_time() - cpu
                after = run_delay()
                waiting = None if delay is None or after is None else after - delay
                asleep = max(woke - began - on_loop - (waiting or 0.0) - self.TICK_S, 0.0)
                hold = Hold(late, on_loop, waiting, asleep)
                if late > self.most:
                    self.most, self.worst = late, hold
                if late > HELD_S:
                    self.holds_over += 1
                    self.over.add(hold)

    def __enter__(self) -> LoopLag:
        self._task = asyncio.get_running_loop().create_task(self._tick())
        self._began = (time.monotonic(), time.thread_time(), _process_cpu())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        wall, loop_cpu, process_cpu = self._began
        self.wall = time.monotonic() - wall
        self.loop_cpu = time.thread_time() - loop_cpu
        self.process_cpu = _process_cpu() - process_cpu

    def figures(self, prefix: str) -> dict[str, float]:
        """The worst hold and the sum over `HELD_S`, split, as figures named `prefix …`."""
        found = {
            f"{prefix}": self.most,
            f"{prefix} on loop": self.worst.on_loop,
            f"{prefix} asleep": self.worst.asleep,
            f"{prefix} holds over": float(self.holds_over),
            f"{prefix} over": self.over.late,
            f"{prefix} over on loop": self.over.on_loop,
            f"{prefix} over asleep": self.over.asleep,
            f"{prefix} wall": self.wall,
            f"{prefix} loop cpu": self.loop_cpu,
            f"{prefix} process cpu": self.process_cpu,
        }
        if self.worst.waiting is not None and self.over.waiting is not None:
            found[f"{prefix} waiting"] = self.worst.waiting
            found[f"{prefix} over waiting"] = self.over.waiting
        return found


def hold_of(figures: dict[str, float], prefix: str, over: bool = False) -> Hold:
    """The hold `LoopLag.figures` wrote under `prefix` (the worst, or the sum over)."""
    key = f"{prefix} over" if over else prefix
    return Hold(
        late=figures.get(key, 0.0),
        on_loop=figures.get(f"{key} on loop", 0.0),
        waiting=figures.get(f"{key} waiting"),
        asleep=figures.get(f"{key} asleep", 0.0),
    )


def _process_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


@contextlib.contextmanager
def _schedstat() -> Iterator[Callable[[], float | None]]:
    """A function answering the loop thread's run delay so far in seconds (None where
    the kernel keeps no schedstat)."""
    path = f"/proc/self/task/{threading.get_native_id()}/schedstat"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        yield lambda: None
        return

    def run_delay() -> float | None:
        # "<on-cpu ns> <run delay ns> <timeslices>"
        return int(os.pread(fd, 128, 0).split()[1]) / 1e9

    try:
        yield run_delay
    finally:
        os.close(fd)
