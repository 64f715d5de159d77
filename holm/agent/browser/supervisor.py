"""A screen's Chromium, kept running. Chromium ends when its last window closes (a client's
`page.close()` of the last page, `alt+F4`, a crash); the screen's browser is then started
again with the same profile on a blank page, its new DevTools port is read, and whoever
follows the port (the pages, the tab watch, the DevTools bridge) follows the new one. A
page operation that comes meanwhile waits for it (`wait_up`, bounded); one that finds it
could not come back fails, naming why. The starts are counted, for holmd to record
(`await_start`: a `browser_restarted` entry, docs/trace.md)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable

from holm.errors import BadRequest, Failed
from holm.wire.runtime import BrowserStarts

log = logging.getLogger("holm.agent")

# How long a page operation waits for a browser that is starting again (it takes 1 to 3 s).
WAIT_UP_S = 30.0
# A browser that ends this soon after it started counts as a failed start: after
# MAX_QUICK_ENDS of those in a row, it is not started again.
QUICK_END_S = 5.0
MAX_QUICK_ENDS = 3
RETRY_PAUSE_S = 1.0
# How long a Chromium closing its last window may take to end.
ENDING_S = 5.0
POLL_S = 0.25

Launch = Callable[[], Awaitable[tuple[subprocess.Popen[bytes], int]]]
Follow = Callable[[int], Awaitable[None]]


def why_ended(code: int | None) -> str:
    """What a Chromium's exit status says of its end."""
    if code == 0:
        return "chromium ended with 0 (its last window was closed)"
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"chromium was ended by {name}"
    return f"chromium ended with {code}"


async def ended(proc: subprocess.Popen[bytes]) -> int | None:
    """Wait for `proc` to end (a pidfd the loop watches: no thread, no polling), and give
    its exit status."""
    loop = asyncio.get_running_loop()
    try:
        fd = os.pidfd_open(proc.pid)
    except OSError:
        # Reaped already, or no pidfd on this kernel.
        while proc.poll() is None:
            await asyncio.sleep(POLL_S)
        return proc.returncode
    done: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not done.done():
            done.set_result(None)

    loop.add_reader(fd, readable)
    try:
        if proc.poll() is None:
            await done
    finally:
        loop.remove_reader(fd)
        os.close(fd)
    # Ended: this reaps it at once.
    return proc.wait()


class Browser:
    """One screen's Chromium: started by `launch` (which answers the process and its
    DevTools port), started again by it each time it ends, and `follow`ed (awaited with
    the new port) before page operations go on."""

    def __init__(self, screen: int, launch: Launch, follow: Follow) -> None:
        self.screen = screen
        self._launch = launch
        self._follow = follow
        self.port: int | None = None
        # How many times it was started again, and why the last time.
        self.starts = 0
        self.why: str | None = None
        # Set when it could not be started again: every page operation then fails with it.
        self.failure: str | None = None
        self._up = asyncio.Event()
        # Set from the moment it ended until it is up again.
        self._ended = asyncio.Event()
        self._started = asyncio.Condition()
        self._keeping: asyncio.Task[None] | None = None
        self._closing = False

    def keep(self, proc: subprocess.Popen[bytes], port: int) -> None:
        """The browser bring-up started is up on `port`: keep it from now on."""
        self.port = port
        self._up.set()
        self._keeping = asyncio.create_task(self._keep(proc), name=f"chromium {self.screen}")

    async def _keep(self, proc: subprocess.Popen[bytes]) -> None:
        quick = 0
        while True:
            began = time.monotonic()
            code = await ended(proc)
            if self._closing:
                return
            why = why_ended(code)
            log.warning("screen %d: %s; starting it again", self.screen, why)
            self._up.clear()
            self._ended.set()
            self.port = None
            quick = quick + 1 if time.monotonic() - began < QUICK_END_S else 0
            started = None if quick >= MAX_QUICK_ENDS else await self._start_again()
            if self._closing:
                if started is not None:
                    started[0].terminate()
                return
            if started is None:
                self.why = why
                self.failure = (
                    f"screen {self.screen}'s Chromium could not be started again after {why}"
                    + (
                        f" (it ended {quick} times within {QUICK_END_S:.0f} s of its start)"
                        if quick >= MAX_QUICK_ENDS
                        else ""
                    )
                )
                log.error("%s", self.failure)
                self._up.set()
                await self._told()
                return
            proc, self.port = started
            with contextlib.suppress(Exception):
                await self._follow(self.port)
            log.info("screen %d: chromium is up again, DevTools on port %d", self.screen, self.port)
            self.starts += 1
            self.why = why
            self._ended.clear()
            self._up.set()
            await self._told()

    async def _start_again(self) -> tuple[subprocess.Popen[bytes], int] | None:
        for attempt in range(MAX_QUICK_ENDS):
            try:
                return await self._launch()
            except Exception as exc:
                log.warning("screen %d: chromium did not start again: %s", self.screen, exc)
                if self._closing:
                    return None
            if attempt + 1 < MAX_QUICK_ENDS:
                await asyncio.sleep(RETRY_PAUSE_S)
        return None

    async def _told(self) -> None:
        async with self._started:
            self._started.notify_all()

    async def wait_up(self, within_s: float = WAIT_UP_S) -> int:
        """The DevTools port, once the browser is up (waiting at most `within_s` for one
        that is starting again); `Failed` naming why when it is not."""
        if not self._up.is_set():
            try:
                async with asyncio.timeout(within_s):
                    await self._up.wait()
            except TimeoutError:
                raise Failed(
                    f"screen {self.screen}'s Chromium ended and was not up again within "
                    f"{within_s:.0f} s"
                ) from None
        if self.failure is not None or self.port is None:
            raise Failed(self.failure or f"screen {self.screen}'s Chromium is not up")
        return self.port

    async def ending(self, since: int, within_s: float = ENDING_S) -> bool:
        """Whether the browser ended after its `since`th start, or ends within `within_s`:
        a Chromium that lists no page, or stops answering, is closing its last window and
        about to end."""
        if self.down or self.starts > since:
            return True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within_s):
                await self._ended.wait()
        return self.down or self.starts > since

    @property
    def down(self) -> bool:
        """Whether the browser is not up now (ended, or starting again)."""
        return not self._up.is_set() or self.failure is not None

    async def await_start(self, after: int, within_ms: int) -> BrowserStarts:
        """The count of starts once it is past `after` (or as it is after `within_ms`)."""
        if within_ms < 0:
            raise BadRequest("within_ms must be 0 or more")
        async with self._started:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(within_ms / 1000):
                    await self._started.wait_for(
                        lambda: self.starts > after or self.failure is not None
                    )
        return BrowserStarts(starts=self.starts, why=self.why, failure=self.failure)

    async def close(self) -> None:
        self._closing = True
        if self._keeping is not None:
            self._keeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeping
