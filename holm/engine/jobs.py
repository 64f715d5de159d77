"""Queued jobs (`HOLM_SERVER_JOBS=queue`): launches and forks that answer `202` at once and
run later, either as soon as they are queued (an internal schedule) or when a scheduler
calls `/v1/jobs/run` (`HOLM_SERVER_SCHEDULE=external`).

The queue is in memory: a job lost to a restart leaves its box `starting` in the trace, and
the restarted server settles it like any box the runtime does not have.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable

import aiohttp

from holm.config import Config

log = logging.getLogger(__name__)

Work = Callable[[], Awaitable[None]]

# `/v1/jobs/run` stops taking new jobs after this long (docs/server.md, scheduled work).
RUN_BUDGET_SECS = 50.0


class JobQueue:
    def __init__(self, config: Config) -> None:
        self.config = config
        self._queued: deque[tuple[str, Work]] = deque()
        self._running: set[asyncio.Task[None]] = set()
        self._serving = False

    def put(self, name: str, work: Work) -> None:
        """Queue `work`. With an internal schedule it starts now, beside the requests."""
        if self._serving:
            self._spawn(name, work)
            return
        self._queued.append((name, work))
        if self.config.public_url and self.config.cron_secret:
            self._spawn("wake the scheduler", self._call_run)

    def serve(self) -> None:
        """Run each job as it is queued, and those already queued (internal schedule)."""
        self._serving = True
        while self._queued:
            self._spawn(*self._queued.popleft())

    async def run(self, budget_secs: float = RUN_BUDGET_SECS) -> int:
        """Run queued jobs one after the other, taking no new one after `budget_secs`."""
        ran = 0
        deadline = time.monotonic() + budget_secs
        while self._queued and time.monotonic() < deadline:
            name, work = self._queued.popleft()
            await _guarded(name, work)
            ran += 1
        return ran

    def pending(self) -> int:
        return len(self._queued)

    async def close(self) -> None:
        self._serving = False
        for task in list(self._running):
            task.cancel()
        for task in list(self._running):
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _spawn(self, name: str, work: Work) -> None:
        task = asyncio.create_task(_guarded(name, work), name=name)
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _call_run(self) -> None:
        """Ask the server's own public address to run the jobs, so that a job does not wait
        for the next tick of an external scheduler."""
        url = f"{(self.config.public_url or '').rstrip('/')}/v1/jobs/run"
        headers = {"authorization": f"Bearer {self.config.cron_secret}"}
        timeout = aiohttp.ClientTimeout(total=RUN_BUDGET_SECS + 30)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(url, headers=headers) as response,
        ):
            if response.status >= 400:
                log.warning("%s answered %s", url, response.status)


async def _guarded(name: str, work: Work) -> None:
    try:
        await work()
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("job %s failed", name)
