"""A count of a screen's changes that coroutines can wait on: bumped as changes are told
(by the X server in a box, by the runtime double's own actions), waited past by the frame
watcher through `Desktop.await_change`."""

from __future__ import annotations

import asyncio
import contextlib


class ChangeCount:
    """Used on one event loop; `bump` from another thread goes through the loop's
    `call_soon_threadsafe`."""

    def __init__(self) -> None:
        self.value = 0
        self._changed = asyncio.Event()

    def bump(self) -> None:
        self.value += 1
        # Every waiter of this change wakes; later waiters wait for the next.
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_past(self, after: int, within_ms: int) -> int:
        """The count as soon as it is past `after`, or as it is after `within_ms`."""
        deadline = asyncio.get_running_loop().time() + within_ms / 1000
        while self.value <= after:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)
        return self.value


__all__ = ["ChangeCount"]
