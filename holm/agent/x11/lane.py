"""A thread that owns one of a screen's X connections, and the agent's loop beside it.

Work that can block for long (a human pointer path, reading a screen's tiles) runs on the
thread, so that nothing else of the box waits behind it. Work that cannot (XTEST requests,
asking the X server what was drawn) runs on the loop when the thread has nothing to do
(`idle`; the caller decides, as `Screen.on_input` does): a hop to a thread and back costs
about 0.4 ms on this machine's VMs (a thread woken on the other CPU waits for it), more
than the work, which blocks the loop no longer than it would block the thread. While the
thread has anything to do, all work goes there behind it, so no two calls ever use the
connection at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


class Lane:
    def __init__(self, name: str) -> None:
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=name)
        # Calls given to the thread and not done yet.
        self._busy = 0
        # Calls given to the thread in all (the tests count them).
        self.handed = 0

    @property
    def idle(self) -> bool:
        """Whether the thread has nothing to do: work may run right here instead."""
        return not self._busy

    async def run(self, work: Callable[[], T]) -> T:
        """`work`'s answer, from the thread."""
        loop = asyncio.get_running_loop()
        done = self._thread.submit(work)
        self._busy += 1
        self.handed += 1
        # Counted down when the thread is done, not when the caller stops waiting: a
        # cancelled caller leaves the work running on the connection.
        done.add_done_callback(lambda _: loop.is_closed() or loop.call_soon_threadsafe(self._done))
        return await asyncio.wrap_future(done)

    def here(self, work: Callable[[], T | None]) -> T | None:
        """`work`'s answer, run right here when the thread is idle; None when it is not.
        For a quick check that may spare the thread's work (`work` answers None when it
        cannot)."""
        return None if self._busy else work()

    def _done(self) -> None:
        self._busy -= 1

    def shutdown(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)


__all__ = ["Lane"]
