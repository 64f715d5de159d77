"""Debian's Chromium, headless, driven through its DevTools protocol (open a page, evaluate
in it), for the tests that need a browser of their own (a page of another origin) and the
benches that time a page (bench/trace_view.py)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM = Path("/usr/bin/chromium")
START_TIMEOUT_S = 30.0


def _env() -> dict[str, str]:
    """This process's environment without any HOLM_* setting: nothing of a server's."""
    return {name: value for name, value in os.environ.items() if not name.startswith("HOLM_")}


class Chromium:
    """Debian's Chromium, headless, driven through its DevTools protocol: open a page,
    evaluate in it."""

    def __init__(self, profile: Path, *flags: str) -> None:
        self.profile = profile
        self.flags = flags
        self.process: subprocess.Popen[bytes] | None = None
        self.session: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.events: list[dict[str, Any]] = []
        self._ids = iter(range(1, 1_000_000))

    async def __aenter__(self) -> Chromium:
        self.process = subprocess.Popen(
            [
                str(CHROMIUM),
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={self.profile}",
                "--remote-debugging-port=0",
                *self.flags,
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if self.process.poll() is not None or time.monotonic() > deadline:
                await self.__aexit__()
                raise RuntimeError("Chromium did not open its DevTools port")
            await asyncio.sleep(0.05)
        port = int(port_file.read_text().splitlines()[0])
        self.session = aiohttp.ClientSession()
        async with self.session.get(f"http://127.0.0.1:{port}/json/list") as response:
            targets = await response.json()
        page = next(target for target in targets if target["type"] == "page")
        self.ws = await self.session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        await self.call("Page.enable")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.session is not None:
            await self.session.close()
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    async def _message(self) -> dict[str, Any]:
        assert self.ws is not None
        message = await asyncio.wait_for(self.ws.receive_json(), START_TIMEOUT_S)
        assert isinstance(message, dict)
        return message

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        assert self.ws is not None
        number = next(self._ids)
        await self.ws.send_json({"id": number, "method": method, "params": params})
        while True:
            message = await self._message()
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result = message["result"]
                assert isinstance(result, dict)
                return result
            self.events.append(message)

    async def open(self, url: str) -> None:
        self.events.clear()
        await self.call("Page.navigate", url=url)
        while not any(event.get("method") == "Page.loadEventFired" for event in self.events):
            self.events.append(await self._message())

    async def evaluate(self, expression: str) -> Any:
        answer = await self.call(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in answer:
            raise RuntimeError(f"the page's script failed: {answer['exceptionDetails']}")
        return answer["result"].get("value")
