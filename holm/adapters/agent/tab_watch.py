"""Whether a screen's Chromium may have changed its tabs, told by Chromium as it happens:
one DevTools session on the browser, with target discovery on, counts the events of its
targets (a tab created, gone, navigated or retitled: `Target.targetCreated`,
`targetDestroyed`, `targetInfoChanged`, `targetCrashed`), so that a tab listing nothing
changed since is answered as it was, without asking DevTools' `/json/list` (every batch's
answer carries the tabs: pages.py lists them afresh when this says they changed).

When the session cannot be opened or closes, `live` is False and every listing is fresh
(pages.py opens it again at the next listing).
"""

from __future__ import annotations

import json
import logging

from holm.adapters.agent import devtools_wire

log = logging.getLogger("holm.agent")

HTTP_TIMEOUT_S = 10.0
_DISCOVER = {"id": 1, "method": "Target.setDiscoverTargets", "params": {"discover": True}}


class TabWatch:
    def __init__(self) -> None:
        # A count of the changes told; a listing made at one count holds until the next.
        self.changes = 0
        self.live = False

    async def watch(self, port: int) -> None:
        """Follow the browser's targets until its session closes (run as a task)."""
        ws: devtools_wire.WebSocket | None = None
        try:
            _, body = await devtools_wire.request(port, "GET", "/json/version", HTTP_TIMEOUT_S)
            ws = await devtools_wire.WebSocket.connect(json.loads(body)["webSocketDebuggerUrl"])
            await ws.send_str(json.dumps(_DISCOVER))
            async for text in ws:
                data = json.loads(text)
                if data.get("id") == _DISCOVER["id"]:
                    # From here on, every change of a target is told.
                    self.live = "error" not in data
                elif str(data.get("method", "")).startswith("Target."):
                    self.changes += 1
        except (devtools_wire.Unreachable, OSError, KeyError, ValueError) as exc:
            log.info("the tab watch of DevTools on port %s ended: %s", port, exc)
        finally:
            self.live = False
            if ws is not None:
                await ws.close()


__all__ = ["TabWatch"]
