"""Whether a screen was drawn on, told by the X server rather than found by looking: a
thread of its own, on a connection of its own, waits for the DAMAGE extension's events and
counts them, so the frame watcher can wait for a change instead of polling for one, and a
still screen costs nothing.

Counts are of reports, not of pictures: a program that draws the same pixels again counts
too (the watcher then finds the hash unchanged). `DamageReportNonEmpty` sends one event
when the screen's damage goes from nothing to something; the thread clears it at once, so
the next drawing sends the next event: a burst of drawing is a few events, not thousands.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading

from Xlib.display import Display
from Xlib.error import ConnectionClosedError
from Xlib.ext import damage

from holm.agent.frames.change_count import ChangeCount
from holm.agent.frames.tiles import subscribe

log = logging.getLogger("holm.agent")

CLOSE_WAIT_S = 2.0


class DamageWatch:
    def __init__(self, display_name: str, loop: asyncio.AbstractEventLoop) -> None:
        self.count = ChangeCount()
        self._loop = loop
        self._conn = Display(display_name)
        self._thread = threading.Thread(
            target=self._listen, name=f"damage-{display_name}", daemon=True
        )
        # Without DAMAGE nothing is ever reported: a waiter waits its whole time.
        if self._conn.has_extension("DAMAGE"):
            self._damage = subscribe(self._conn, damage.DamageReportNonEmpty)
            self._thread.start()

    def _listen(self) -> None:
        notify = self._conn.extension_event.DamageNotify
        try:
            while True:
                event = self._conn.next_event()
                if event.type == notify:
                    self._conn.damage_subtract(self._damage)
                    self._conn.flush()
                    self._loop.call_soon_threadsafe(self.count.bump)
        # RuntimeError: the event loop is closed, the agent is ending.
        except (ConnectionClosedError, OSError, RuntimeError) as exc:
            log.info("the damage watch of %s ended: %s", self._conn.get_display_name(), exc)

    def telling(self) -> bool:
        """Whether changes are being counted now (DAMAGE is there and the thread runs)."""
        return self._thread.is_alive()

    def close(self) -> None:
        # The thread waits in recv(): shut the socket down under it (python-xlib's close
        # from another thread would break its reader mid-read), then close.
        with contextlib.suppress(OSError):
            self._conn.display.socket.shutdown(socket.SHUT_RDWR)
        if self._thread.is_alive():
            self._thread.join(CLOSE_WAIT_S)
        # The socket is shut: python-xlib may fail to say goodbye on it, which is fine.
        with contextlib.suppress(Exception):
            self._conn.close()


__all__ = ["DamageWatch"]
