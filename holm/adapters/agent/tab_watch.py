"""What a screen's Chromium tells as it happens, on one DevTools session on the browser:

- **Tabs.** With target discovery on, it counts the events of its targets (a tab created,
  gone, navigated or retitled: `Target.targetCreated`, `targetDestroyed`,
  `targetInfoChanged`, `targetCrashed`), so that a tab listing nothing changed since is
  answered as it was, without asking DevTools' `/json/list` (every batch's answer carries
  the tabs: pages.py lists them afresh when this says they changed).
- **Clicks that landed.** Attached to every page and frame (`Target.setAutoAttach`, flat
  sessions), it puts a listener of `pointerdown` in each document, which calls a binding
  with where the pointer went down on the screen and with which button; `on_landed` gets
  that. Keys typed right after a click wait for it (input.py, `pointer_landed`): the page
  has then taken the click, and the focus it moves.

When the session cannot be opened or closes, `live` is False and every listing is fresh
(pages.py opens it again at the next listing); keys then wait as long as when a click lands
outside any page.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from collections.abc import Callable

from holm.adapters.agent import devtools_wire

log = logging.getLogger("holm.agent")

HTTP_TIMEOUT_S = 10.0
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
BINDING = "__holmLanded"
# Run in each document before its own scripts (and once in the document a page has when it
# is attached): the binding is taken off the page's global object, so that the page's
# scripts neither see it nor call it; the listener listens first, in the capture phase.
LISTENER = f"""(() => {{
  const tell = globalThis.{BINDING};
  if (typeof tell !== "function") return;
  delete globalThis.{BINDING};
  addEventListener("pointerdown", e => tell(
    `${{Math.round(e.screenX)}},${{Math.round(e.screenY)}},${{e.button}}`), true);
}})()"""
# What a page or frame is told when it is attached. Without Page.enable and Runtime.enable,
# the documents it navigates to later get neither the script nor the binding.
_INSTALL: tuple[tuple[str, dict[str, object]], ...] = (
    ("Page.enable", {}),
    ("Runtime.enable", {}),
    ("Runtime.addBinding", {"name": BINDING}),
    ("Page.addScriptToEvaluateOnNewDocument", {"source": LISTENER}),
    ("Runtime.evaluate", {"expression": LISTENER}),
    # Its cross-site frames are targets of their own.
    ("Target.setAutoAttach", _ATTACH),
)
Landed = Callable[[int, int, int], None]
_PAYLOAD = re.compile(r"(-?\d{1,6}),(-?\d{1,6}),(\d)", re.ASCII)


def _landing(payload: str) -> tuple[int, int, int] | None:
    """`x,y,button` as the listener tells it; None for anything else (a page that found the
    binding before the listener took it could call it with anything)."""
    told = _PAYLOAD.fullmatch(payload)
    if told is None:
        return None
    x, y, button = (int(part) for part in told.groups())
    return x, y, button


class TabWatch:
    def __init__(self, on_landed: Landed | None = None) -> None:
        # A count of the changes told; a listing made at one count holds until the next.
        self.changes = 0
        self.live = False
        self.on_landed = on_landed

    async def watch(self, port: int) -> None:
        """Follow the browser's targets until its session closes (run as a task)."""
        ws: devtools_wire.WebSocket | None = None
        ids = itertools.count(2)
        try:
            _, body = await devtools_wire.request(port, "GET", "/json/version", HTTP_TIMEOUT_S)
            ws = await devtools_wire.WebSocket.connect(json.loads(body)["webSocketDebuggerUrl"])
            await ws.send_str(json.dumps(_DISCOVER))
            if self.on_landed is not None:
                attach = {"id": next(ids), "method": "Target.setAutoAttach", "params": _ATTACH}
                await ws.send_str(json.dumps(attach))
            async for text in ws:
                # The pages' own events come on this socket too (Runtime.enable): most are
                # passed over without being parsed.
                if '"Runtime.bindingCalled"' in text:
                    self._landed(json.loads(text))
                elif '"Target.attachedToTarget"' in text:
                    await self._install(ws, json.loads(text), ids)
                elif '"sessionId"' not in text:
                    data = json.loads(text)
                    if data.get("id") == _DISCOVER["id"]:
                        # From here on, every change of a target is told.
                        self.live = "error" not in data
                    elif data.get("method") in TAB_EVENTS:
                        self.changes += 1
        except (devtools_wire.Unreachable, OSError, KeyError, ValueError) as exc:
            log.info("the tab watch of DevTools on port %s ended: %s", port, exc)
        finally:
            self.live = False
            if ws is not None:
                await ws.close()

    def _landed(self, data: dict[str, object]) -> None:
        params = data.get("params")
        if data.get("method") != "Runtime.bindingCalled" or not isinstance(params, dict):
            return
        if params.get("name") != BINDING:
            return
        landing = _landing(str(params.get("payload", "")))
        if landing is not None and self.on_landed is not None:
            self.on_landed(*landing)

    async def _install(
        self, ws: devtools_wire.WebSocket, data: dict[str, object], ids: itertools.count[int]
    ) -> None:
        params = data.get("params")
        if data.get("method") != "Target.attachedToTarget" or not isinstance(params, dict):
            return
        info = params.get("targetInfo")
        if not isinstance(info, dict) or info.get("type") not in ("page", "iframe"):
            return
        session = params.get("sessionId")
        for method, args in _INSTALL:
            message = {"id": next(ids), "method": method, "params": args, "sessionId": session}
            await ws.send_str(json.dumps(message))


__all__ = ["TabWatch"]
