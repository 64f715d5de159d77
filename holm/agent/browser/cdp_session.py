"""One DevTools session on one page, kept open across operations: a reader task takes every
message off the page's WebSocket, so commands can be sent several at a time and wait only for
their own answers, and the page's events (navigations, dialogs) are seen even between
operations. The script the commands run in the page is `page_js.py`."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Iterable
from typing import Any

from holm.agent.browser.devtools_wire import Unreachable, WebSocket
from holm.agent.browser.page_js import INSTALL, MISSING, call
from holm.errors import Failed, Timeout, Transport

COMMAND_TIMEOUT_S = 5.0
# Events kept between two operations: a page that logs or loads without end must not grow
# the agent's memory; an operation reads only what came since it began.
MAX_EVENTS = 2000


class Cdp:
    def __init__(self, ws: WebSocket, ids: itertools.count[int], tab: str) -> None:
        self.ws = ws
        self.ids = ids
        self.tab = tab
        # A page target's main frame has the target's ID.
        self.main_frame = tab
        self.events: list[dict[str, Any]] = []
        # The dialog the page opened (its DevTools event's params): until it is answered
        # (a `dialog` action), the page runs no script.
        self.dialog: dict[str, Any] | None = None
        self.tab_url = ""
        # Where the last pointer command left the pointer (CSS pixels): a path with motion
        # starts there.
        self.pointer = (0, 0)
        # One operation at a time on a page: each reads the events since it began.
        self.lock = asyncio.Lock()
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._arrived = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, ws_url: str, ids: itertools.count[int], tab: str) -> Cdp:
        try:
            ws = await WebSocket.connect(ws_url)
        except Unreachable as exc:
            raise Transport(f"could not reach the page: {exc}") from None
        cdp = cls(ws, ids, tab)
        await cdp.call("Page.enable")
        return cdp

    @property
    def closed(self) -> bool:
        return self._reader.done()

    async def close(self) -> None:
        await self.ws.close()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                data = json.loads(message)
                answered = self._waiting.pop(data.get("id", -1), None)
                if answered is not None:
                    if not answered.done():
                        answered.set_result(data)
                elif "method" in data:
                    self._event(data)
        finally:
            for waiting in self._waiting.values():
                if not waiting.done():
                    waiting.set_exception(Transport("the page's DevTools session closed"))
            self._waiting.clear()
            # Whoever waits for an event hears no more will come (`until`).
            self._arrived.set()

    def _event(self, data: dict[str, Any]) -> None:
        if len(self.events) < MAX_EVENTS:
            self.events.append(data)
        self._arrived.set()
        match data["method"]:
            case "Page.javascriptDialogOpening":
                self.dialog = data.get("params", {})
                # The page waits for the dialog, and so does every command sent to it.
                for waiting in self._waiting.values():
                    if not waiting.done():
                        waiting.set_result({"result": {}})
                self._waiting.clear()
            case "Page.javascriptDialogClosed":
                self.dialog = None

    def begin(self) -> None:
        """Start an operation: the events it reads are those that come from now on."""
        self.events.clear()

    def send(self, method: str, params: dict[str, Any] | None = None) -> asyncio.Future[Any]:
        """Send a command now; its answer is the returned future's (see `answer`)."""
        if self.closed:
            raise Transport("the page's DevTools session closed")
        command_id = next(self.ids)
        waiting: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[command_id] = waiting
        message = {"id": command_id, "method": method, "params": params or {}}
        return asyncio.ensure_future(self._sent(command_id, message, waiting))

    async def _sent(
        self, command_id: int, message: dict[str, Any], waiting: asyncio.Future[dict[str, Any]]
    ) -> dict[str, Any]:
        try:
            try:
                await self.ws.send_str(json.dumps(message))
            except (Unreachable, OSError):
                raise Transport("the page's DevTools session closed") from None
            return await waiting
        finally:
            # Answered, or given up on (a timeout): nothing waits for it any more.
            self._waiting.pop(command_id, None)

    async def answer(
        self, method: str, sent: asyncio.Future[Any], timeout: float = COMMAND_TIMEOUT_S
    ) -> dict[str, Any]:
        try:
            async with asyncio.timeout(timeout):
                data = await sent
        except TimeoutError:
            raise Timeout(f"the page did not answer {method} in time") from None
        if "error" in data:
            raise Failed(f"{method}: {data['error'].get('message')}")
        return dict(data.get("result", {}))

    async def call(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = COMMAND_TIMEOUT_S
    ) -> dict[str, Any]:
        return await self.answer(method, self.send(method, params), timeout)

    async def calls(self, commands: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Send `commands` one after the other without waiting, then wait for them all
        (DevTools runs a session's commands in order)."""
        sent = [(method, self.send(method, params)) for method, params in commands]
        for method, future in sent:
            await self.answer(method, future)

    async def js(self, expression: str, timeout: float = COMMAND_TIMEOUT_S) -> Any:
        """The value of `expression` (awaited); a throw is `Failed`."""
        if self.dialog is not None:
            raise Failed("a dialog is open on the page: answer it with a `dialog` action")
        params = {"expression": expression, "awaitPromise": True, "returnByValue": True}
        answer = await self.call("Runtime.evaluate", params, timeout)
        if "exceptionDetails" in answer:
            raise Failed(f"the page threw: {thrown(answer['exceptionDetails'])}")
        return answer.get("result", {}).get("value")

    async def run(self, body: str, **args: object) -> Any:
        """Run `body` (see `page_js.call`) with the page script, putting the script in the
        page first when this document lacks it: it is sent once per document, not with
        every call."""
        got = await self.js(call(body, **args))
        if got == MISSING:
            await self.js(INSTALL)
            got = await self.js(call(body, **args))
        return got

    async def until(self, methods: tuple[str, ...], seconds: float) -> bool:
        """Wait (at most `seconds`) until the main frame sends one of `methods`."""
        deadline = time.monotonic() + seconds
        while not self.saw(*methods):
            if self.closed:
                raise Transport("the page's DevTools session closed")
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._arrived.wait()
        return True

    def saw(self, *methods: str) -> bool:
        return any(
            e["method"] in methods and _frame_of(e) in (None, self.main_frame) for e in self.events
        )

    def mouse(
        self, kind: str, x: float, y: float, button: str = "none", clicks: int = 0, mods: int = 0
    ) -> tuple[str, dict[str, Any]]:
        """A mouse command for `calls`."""
        params = {
            "type": kind,
            "x": x,
            "y": y,
            "button": button,
            "clickCount": clicks,
            "modifiers": mods,
        }
        return "Input.dispatchMouseEvent", params


def _frame_of(event: dict[str, Any]) -> str | None:
    params = event.get("params", {})
    frame = params.get("frameId")
    if frame is None and isinstance(params.get("frame"), dict):
        frame = params["frame"].get("id")
    return frame if isinstance(frame, str) else None


def thrown(details: dict[str, Any]) -> str:
    exception = details.get("exception", {})
    return str(exception.get("description") or details.get("text") or "an exception")
