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

import aiohttp

log = logging.getLogger("holm.agent")

HTTP_TIMEOUT = aiohttp.ClientTimeout(total=10)
_DISCOVER = {"id": 1, "method": "Target.setDiscoverTargets", "params": {"discover": True}}


class TabWatch:
    def __init__(self) -> None:
        # A count of the changes told; a listing made at one count holds until the next.
        self.changes = 0
        self.live = False

    async def watch(self, session: aiohttp.ClientSession, base: str) -> None:
        """Follow the browser's targets until its session closes (run as a task)."""
        try:
            async with session.get(base + "/json/version", timeout=HTTP_TIMEOUT) as response:
                url = (await response.json(content_type=None))["webSocketDebuggerUrl"]
            async with session.ws_connect(url, max_msg_size=0) as ws:
                await ws.send_str(json.dumps(_DISCOVER))
                async for message in ws:
                    if message.type != aiohttp.WSMsgType.TEXT:
                        break
                    data = json.loads(message.data)
                    if data.get("id") == _DISCOVER["id"]:
                        # From here on, every change of a target is told.
                        self.live = "error" not in data
                    elif str(data.get("method", "")).startswith("Target."):
                        self.changes += 1
        # RuntimeError: the agent's HTTP session is closed, the agent is ending.
        except (
            aiohttp.ClientError,
            OSError,
            TimeoutError,
            KeyError,
            ValueError,
            RuntimeError,
        ) as exc:
            log.info("the tab watch of %s ended: %s", base, exc)
        finally:
            self.live = False


__all__ = ["TabWatch"]
