"""The keeper of a screen's browser (supervisor.py), with small real processes in place of
Chromium: when one ends it is started again and followed, page operations wait for it,
holmd's wait hears each start, and a browser that cannot come back fails naming why."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from holm.agent.browser import supervisor
from holm.agent.browser.supervisor import Browser, why_ended
from holm.errors import Failed


def running() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"])


async def test_an_ended_browser_is_started_again_and_followed() -> None:
    ports = iter([9001, 9002])
    started: list[subprocess.Popen[bytes]] = []
    followed: list[int] = []
    gate = asyncio.Event()

    async def launch() -> tuple[subprocess.Popen[bytes], int]:
        await gate.wait()
        started.append(running())
        return started[-1], next(ports)

    async def follow(port: int) -> None:
        followed.append(port)

    first = running()
    browser = Browser(0, launch, follow)
    browser.keep(first, 9000)
    assert await browser.wait_up() == 9000
    told = asyncio.ensure_future(browser.await_start(0, 10_000))
    first.terminate()
    for _ in range(200):
        if browser.down:
            break
        await asyncio.sleep(0.01)
    assert browser.down
    # A page operation that comes meanwhile waits, and gets the new port.
    waiting = asyncio.ensure_future(browser.wait_up())
    await asyncio.sleep(0.05)
    assert not waiting.done() and not told.done()
    gate.set()
    assert await waiting == 9001
    assert (await told).starts == 1
    assert followed == [9001] and browser.why == "chromium was ended by SIGTERM"
    assert await browser.ending(0) is True and await browser.ending(1, within_s=0) is False
    await browser.close()
    for proc in started:
        proc.kill()
        proc.wait()


async def test_a_browser_that_cannot_come_back_fails_naming_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(supervisor, "RETRY_PAUSE_S", 0)

    async def launch() -> tuple[subprocess.Popen[bytes], int]:
        raise OSError("no chromium here")

    async def follow(port: int) -> None:
        pass

    browser = Browser(1, launch, follow)
    ended = subprocess.Popen(["true"])
    browser.keep(ended, 9000)
    told = await browser.await_start(0, 10_000)
    assert told.starts == 0 and told.failure is not None
    assert "screen 1's Chromium could not be started again after" in told.failure
    with pytest.raises(Failed) as failed:
        await browser.wait_up()
    assert failed.value.message == told.failure and not failed.value.retryable
    await browser.close()


def test_how_it_ended_is_said() -> None:
    assert why_ended(0) == "chromium ended with 0 (its last window was closed)"
    assert why_ended(-9) == "chromium was ended by SIGKILL"
    assert why_ended(21) == "chromium ended with 21"
