"""What a screen's Chromium tells as it happens, on one DevTools session on the browser:

- **Tabs.** With target discovery on, it counts the events of its targets (a tab created,
  gone, navigated or retitled: `Target.targetCreated`, `targetDestroyed`,
  `targetInfoChanged`, `targetCrashed`) and the navigations of the pages' main frames begun
  and committed (`Page.frameStartedNavigating`, `frameNavigated`), so that a tab listing
  nothing changed since is answered as it was, without asking DevTools' `/json/list`
  (every batch's answer carries the tabs: pages.py lists them afresh when this says they
  changed).
- **Clicks that landed.** Attached to every page and cross-site frame
  (`Target.setAutoAttach`, flat sessions), it makes a world of its own in each document
  (`Page.createIsolatedWorld`: the page's scripts cannot see it) with a binding and a
  listener of `pointerdown`, which tells where the pointer went down on the screen and with
  which button; `on_landed` gets that. Keys typed right after a click wait for it
  (input.py, `pointer_landed`): the page has then taken the click, and the focus it moves.
  Each new document of a frame gets its world when the frame navigates
  (`Page.frameNavigated`). The `Runtime` domain stays off: with it on, every console
  message of every page would come to the agent.

When the session cannot be opened or closes, `live` is False and every listing is fresh
(pages.py opens it again at the next listing); keys then wait as long as when a click lands
outside any page.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import re
from collections.abc import Callable
from typing import Any

from holm.agent.browser import devtools_wire

log = logging.getLogger("holm.agent")

HTTP_TIMEOUT_S = 10.0
# How many turns of the loop a listing gives the watch to read what already came: one turn
# to read the socket, one for the watch to take the messages, and a few to spare.
CATCH_UP_TURNS = 8
_DISCOVER = {"id": 1, "method": "Target.setDiscoverTargets", "params": {"discover": True}}
_ATTACH: dict[str, object] = {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True}
TAB_EVENTS = frozenset(
    {
        "Target.targetCreated",
        "Target.targetDestroyed",
        "Target.targetInfoChanged",
        "Target.targetCrashed",
    }
)
# A navigation the browser began (Page.navigate, the address bar) shows its new address in
# DevTools' /json/list from its start, about 30 ms before `Target.targetInfoChanged`, which
# comes once it commits: the attached pages' own events of a navigation of their main frame
# begun and committed count as changes of the listing too, so that a kept listing never
# shows an address a fresh one would not. (A frame inside a page is no tab: its navigations
# do not count.)
NAVIGATION_EVENTS = frozenset({"Page.frameStartedNavigating", "Page.frameNavigated"})
WORLD = "holm"
BINDING = "__holmLanded"
# Run in the agent's own world of a document; it listens in the capture phase. A page sees
# the same DOM, and can dispatch a pointerdown of its own making anywhere: only one that
# came from the input (`isTrusted`) is told.
# A key going down is told too ("k"): a press right after keys waits for them; and where a
# button came up ("u" and where): a wheel right after a click waits for it (input.py).
# Once a world: a world of that name is the same world to a session opened again, and two
# listeners would tell each key twice (and let a press go before its last key landed).
LISTENER = (
    "if (!globalThis.__holmListening) { globalThis.__holmListening = true;"
    f'addEventListener("pointerdown", e => e.isTrusted && {BINDING}('
    "`${Math.round(e.screenX)},${Math.round(e.screenY)},${e.button}`), true);"
    f'addEventListener("keydown", e => e.isTrusted && {BINDING}("k"), true);'
    f'addEventListener("pointerup", e => e.isTrusted && {BINDING}('
    "`u${Math.round(e.screenX)},${Math.round(e.screenY)},${e.button}`), true) }"
)
RELEASE_PREFIX = "u"
KEY_PAYLOAD = "k"
Landed = Callable[[int, int, int], None]
KeyLanded = Callable[[], None]
_PAYLOAD = re.compile(r"(-?\d{1,6}),(-?\d{1,6}),(\d)", re.ASCII)


def _landing(payload: str) -> tuple[int, int, int] | None:
    """`x,y,button` as the listener tells it; None for anything else."""
    told = _PAYLOAD.fullmatch(payload)
    if told is None:
        return None
    x, y, button = (int(part) for part in told.groups())
    return x, y, button


# What Chromium opens on F1: its help centre on the internet (a box has none to offer), in a
# new tab that would take the screen. It is closed as it opens; the tab before is in front
# again, as if F1 had done nothing (F1 still reaches the page first).
HELP_ON_F1 = re.compile(r"^https://support\.google\.com/chrom(e|ium)/?\?p=help&ctx=keyboard")
# Apart from the ids of the commands _Worlds numbers (2 and up), whose answers it follows.
_CLOSE_ID = 2**31 - 1


async def _close_if_help(ws: devtools_wire.WebSocket, params: object) -> None:
    info = params.get("targetInfo") if isinstance(params, dict) else None
    if not isinstance(info, dict) or info.get("type") != "page":
        return
    if HELP_ON_F1.match(str(info.get("url", ""))):
        close = {"targetId": info.get("targetId")}
        message = {"id": _CLOSE_ID, "method": "Target.closeTarget", "params": close}
        await ws.send_str(json.dumps(message))


class TabWatch:
    def __init__(
        self,
        on_landed: Landed | None = None,
        on_key_landed: KeyLanded | None = None,
        on_released: Landed | None = None,
    ) -> None:
        # A count of the changes told; a listing made at one count holds until the next.
        self.changes = 0
        self.live = False
        self.on_landed = on_landed
        self.on_key_landed = on_key_landed
        self.on_released = on_released
        # Every message the session read (the tests count them).
        self.messages = 0
        self._ws: devtools_wire.WebSocket | None = None

    async def watch(self, port: int) -> None:
        """Follow the browser's targets until its session closes (run as a task)."""
        ws: devtools_wire.WebSocket | None = None
        try:
            _, body = await devtools_wire.request(port, "GET", "/json/version", HTTP_TIMEOUT_S)
            ws = self._ws = await devtools_wire.WebSocket.connect(
                json.loads(body)["webSocketDebuggerUrl"]
            )
            await ws.send_str(json.dumps(_DISCOVER))
            worlds = _Worlds(ws)
            told = (self.on_landed, self.on_key_landed, self.on_released)
            if any(callback is not None for callback in told):
                await worlds.send("Target.setAutoAttach", _ATTACH)
            async for text in ws:
                self.messages += 1
                data = json.loads(text)
                if data.get("id") == _DISCOVER["id"]:
                    # From here on, every change of a target is told.
                    self.live = "error" not in data
                elif data.get("method") in TAB_EVENTS:
                    self.changes += 1
                    await _close_if_help(ws, data.get("params"))
                elif data.get("method") == "Runtime.bindingCalled":
                    self._landed(data.get("params"))
                else:
                    if data.get("method") in NAVIGATION_EVENTS and worlds.of_a_tab(data):
                        self.changes += 1
                    await worlds.follow(data)
        except (devtools_wire.Unreachable, OSError, KeyError, ValueError) as exc:
            log.info("the tab watch of DevTools on port %s ended: %s", port, exc)
        finally:
            self.live = False
            self._ws = None
            if ws is not None:
                await ws.close()

    async def caught_up(self, turns: int = CATCH_UP_TURNS) -> bool:
        """Whether every message Chromium sent before now has been read (and counted),
        letting the loop turn a few times while some are still unread: a tab navigated an
        instant ago by another DevTools client may be told on the socket and not yet read,
        and a listing kept from before would then be answered. False when some still are
        (the caller lists afresh)."""
        for _ in range(turns):
            if self.read_all():
                return True
            await asyncio.sleep(0)
        return self.read_all()

    def read_all(self) -> bool:
        """Whether every message Chromium sent before now has been read, now."""
        return self._ws is None or not self._ws.unread()

    def _landed(self, params: object) -> None:
        if not isinstance(params, dict) or params.get("name") != BINDING:
            return
        payload = str(params.get("payload", ""))
        if payload == KEY_PAYLOAD:
            if self.on_key_landed is not None:
                self.on_key_landed()
            return
        if payload.startswith(RELEASE_PREFIX):
            released = _landing(payload.removeprefix(RELEASE_PREFIX))
            if released is not None and self.on_released is not None:
                self.on_released(*released)
            return
        landing = _landing(payload)
        if landing is not None and self.on_landed is not None:
            self.on_landed(*landing)


class _Worlds:
    """The agent's world in each document of the pages and frames attached: made when a
    page or frame is attached and each time one of its frames navigates, then given the
    binding and the listener once Chromium answers with the world's context."""

    def __init__(self, ws: devtools_wire.WebSocket) -> None:
        self.ws = ws
        self.ids = itertools.count(2)
        # The world asked for, by command id: the session it belongs to.
        self.making: dict[int, str] = {}
        # The page (tab) each page session is attached to, by session: a page's main frame
        # has the page's target ID.
        self.pages: dict[str, str] = {}

    def of_a_tab(self, data: dict[str, Any]) -> bool:
        """Whether a page event is of a tab's main frame, not of a frame inside a page."""
        params = data.get("params")
        if not isinstance(params, dict):
            return False
        frame = params.get("frame")
        frame_id = frame.get("id") if isinstance(frame, dict) else params.get("frameId")
        page = self.pages.get(str(data.get("sessionId")))
        return page is not None and frame_id == page

    async def send(self, method: str, params: dict[str, object], session: str | None = None) -> int:
        command = next(self.ids)
        message: dict[str, object] = {"id": command, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        await self.ws.send_str(json.dumps(message))
        return command

    async def follow(self, data: dict[str, Any]) -> None:
        method, params = data.get("method"), data.get("params")
        if not isinstance(params, dict):
            params = {}
        if method == "Target.attachedToTarget":
            info = params.get("targetInfo")
            if isinstance(info, dict) and info.get("type") in ("page", "iframe"):
                session = str(params.get("sessionId"))
                if info.get("type") == "page":
                    self.pages[session] = str(info.get("targetId"))
                await self.send("Page.enable", {}, session)
                # Its cross-site frames are targets of their own.
                await self.send("Target.setAutoAttach", _ATTACH, session)
                # A page target's main frame has the target's ID.
                await self._make(str(info.get("targetId")), session)
        elif method == "Page.frameNavigated":
            frame = params.get("frame")
            if isinstance(frame, dict):
                await self._make(str(frame.get("id")), str(data.get("sessionId")))
        elif isinstance(data.get("id"), int) and data["id"] in self.making:
            session = self.making.pop(data["id"])
            result = data.get("result")
            context = result.get("executionContextId") if isinstance(result, dict) else None
            if isinstance(context, int):
                binding = {"name": BINDING, "executionContextId": context}
                await self.send("Runtime.addBinding", binding, session)
                listener = {"expression": LISTENER, "contextId": context}
                await self.send("Runtime.evaluate", listener, session)

    async def _make(self, frame: str, session: str) -> None:
        params: dict[str, object] = {"frameId": frame, "worldName": WORLD}
        self.making[await self.send("Page.createIsolatedWorld", params, session)] = session


__all__ = ["TabWatch"]
