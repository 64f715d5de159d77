"""Whether a screen's window list may have changed, told by the X server as it happens: a
thread of its own, on a connection of its own, counts the events that can change what a
listing shows, so that a listing nothing changed since is answered as it was, without a
round trip to the X server or a hop to the query thread (every batch's answer carries the
window list: window_list.py reads it when this says it changed).

What counts, the same events `WindowTracker` reads its windows again on:
- on the root window, `_NET_CLIENT_LIST` (windows come and go), `_NET_ACTIVE_WINDOW`, and
  every change of a top-level window (a window manager's frame moved, mapped or gone, a
  popup);
- on each client window, the properties a listing shows and its configure, map and unmap.
Other property changes do not count: programs set some on every input event
(`_NET_WM_USER_TIME`), which would make every click's listing a fresh one.

`settled()` says whether the thread has taken every event the X server has sent it: when it
has not, a listing is read afresh, so an answer never misses a change whose event had
reached the agent before it. Right after a click it often has not (programs set properties
on input, which the thread takes and does not count), so `settle()` waits a little for the
thread to take them: the thread's wake-up and the loop's cost less than a listing, which
is a hop to the query thread and a round trip to the X server for each window.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import threading
from typing import Any

from Xlib import X
from Xlib.display import Display
from Xlib.error import ConnectionClosedError

from holm.agent.x11 import windows
from holm.agent.x11.window_list import SHOWN

log = logging.getLogger("holm.agent")

CLOSE_WAIT_S = 2.0
_CLIENT_MASK = X.PropertyChangeMask | X.StructureNotifyMask


class WindowWatch:
    def __init__(self, display_name: str) -> None:
        # A count of the changes told; a listing made at one count holds until the next.
        self.changes = 0
        self._conn = Display(display_name)
        self._root = self._conn.screen().root
        self._root.change_attributes(event_mask=X.SubstructureNotifyMask | X.PropertyChangeMask)
        atom = self._conn.intern_atom
        self._client_list = int(atom("_NET_CLIENT_LIST"))
        self._on_root = {self._client_list, int(atom("_NET_ACTIVE_WINDOW"))}
        self._shown = {int(atom(name)) for name in SHOWN}
        self._clients: set[int] = set()
        self._watch_clients()
        self._conn.flush()
        self._fd = self._conn.fileno()
        # False while the thread takes events, or is about to: not settled.
        self._idle = False
        # Who waits for the thread to be idle (`settle`), told when it is.
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._waiters_lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(
            target=self._listen, name=f"windows-{display_name}", daemon=True
        )
        self._thread.start()

    def settled(self) -> bool:
        """Whether every event the X server has sent this connection is counted."""
        if not self._idle:
            return False
        ready, _, _ = select.select([self._fd], [], [], 0)
        return not ready

    async def settle(self, within_s: float) -> bool:
        """Whether the watch is settled, waiting up to `within_s` for it to be."""
        if self.settled():
            return True
        loop = asyncio.get_running_loop()
        told: asyncio.Future[None] = loop.create_future()
        with self._waiters_lock:
            self._waiters.append((loop, told))
        # The thread may have gone idle before it could see this waiter: looked at again.
        if not self.settled():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(told, within_s)
        return self.settled()

    def _tell_settled(self) -> None:
        with self._waiters_lock:
            waiters, self._waiters = self._waiters, []
        for loop, told in waiters:
            with contextlib.suppress(RuntimeError):  # a loop already closed
                loop.call_soon_threadsafe(_tell, told)

    def _watch_clients(self) -> None:
        """Watch the client windows not watched yet. A window is watched before the count
        that tells of it, so a listing made after that count sees every later change."""
        ids = set(windows.client_ids(self._conn))
        for wid in ids - self._clients:
            window = self._conn.create_resource_object("window", wid)
            window.change_attributes(event_mask=_CLIENT_MASK, onerror=_ignore)
        self._clients = ids

    def _listen(self) -> None:
        try:
            while True:
                self._idle = True
                if self._waiters:
                    self._tell_settled()
                ready, _, _ = select.select([self._fd, self._wake_r], [], [])
                self._idle = False
                if self._wake_r in ready:
                    return
                changed = False
                while self._conn.pending_events():
                    changed = self._counts(self._conn.next_event()) or changed
                if changed:
                    self.changes += 1
        except (ConnectionClosedError, OSError) as exc:
            log.info("the window watch of %s ended: %s", self._conn.get_display_name(), exc)
        finally:
            # Never settled again: every listing is read afresh.
            self._idle = False

    def _counts(self, ev: Any) -> bool:
        """Whether `ev` may change a listing (and, for the client list, watch the new)."""
        if ev.type == X.PropertyNotify:
            if ev.window.id != self._root.id:
                return ev.atom in self._shown
            if ev.atom == self._client_list:
                self._watch_clients()
                self._conn.flush()
            return ev.atom in self._on_root
        return ev.type in (
            X.ConfigureNotify,
            X.MapNotify,
            X.UnmapNotify,
            X.DestroyNotify,
            X.CreateNotify,
            X.ReparentNotify,
            X.GravityNotify,
            X.CirculateNotify,
        )

    def close(self) -> None:
        os.write(self._wake_w, b"x")
        if self._thread.is_alive():
            self._thread.join(CLOSE_WAIT_S)
        # A display already gone cannot be said goodbye to, which is fine.
        with contextlib.suppress(ConnectionClosedError, OSError):
            self._conn.close()
        os.close(self._wake_r)
        os.close(self._wake_w)


def _tell(told: asyncio.Future[None]) -> None:
    if not told.done():
        told.set_result(None)


def _ignore(*_: object) -> None:
    """A window that is gone before it could be watched: the list tells of it going."""


__all__ = ["WindowWatch"]
