"""The screen's window list, kept current from X events.

Reading one window costs about seven round trips to the X server (class, title, geometry,
position, map state, EWMH state), so listing the windows after every batch cost more than
the batch's click. This list reads a window again only when an event says something it
shows may have changed; when nothing did, a listing costs one round trip (a sync, after
which every event from before it has arrived) and the active window's.

It is used by the query connection's thread only. What it watches:
- on the root window, `_NET_CLIENT_LIST` (windows come and go) and every change of a
  top-level window (the window manager's frames: a frame that moves moves its client);
- on each client window, the properties a listing shows and its configure, map and unmap.
"""

from __future__ import annotations

from typing import Any

from Xlib import X
from Xlib.display import Display

from holm.agent.x11 import windows
from holm.wire.results import WindowInfo

# The properties of a client window that its listing shows.
SHOWN = ("_NET_WM_NAME", "WM_NAME", "WM_CLASS", "_NET_WM_STATE")


class WindowTracker:
    def __init__(self, conn: Display) -> None:
        self.conn = conn
        self.root = conn.screen().root
        self.root.change_attributes(event_mask=X.SubstructureNotifyMask | X.PropertyChangeMask)
        self._shown = {int(conn.intern_atom(name)) for name in SHOWN}
        self._client_list = int(conn.intern_atom("_NET_CLIENT_LIST"))
        self._ids: list[int] | None = None
        self._read: dict[int, windows.ClientWindow] = {}
        self._stale: set[int] = set()
        self._all_stale = True

    def listing(self) -> list[WindowInfo]:
        active = windows.active_id(self.conn)
        return [w.info(active) for w in self.clients()]

    def clients(self) -> list[windows.ClientWindow]:
        self._take_events()
        if self._ids is None:
            self._ids = windows.client_ids(self.conn)
        new = [wid for wid in self._ids if wid not in self._read]
        for wid in new:
            # Watched before it is read, so that no change after the read goes unseen.
            self.conn.create_resource_object("window", wid).change_attributes(
                event_mask=X.PropertyChangeMask | X.StructureNotifyMask, onerror=_ignore
            )
        listed = set(self._ids)
        to_read = listed if self._all_stale else (self._stale & listed) | set(new)
        self._all_stale = False
        self._stale.clear()
        for wid in to_read:
            found = windows.read_window(self.conn, wid)
            if found is None:
                self._read.pop(wid, None)
            else:
                self._read[wid] = found
        for wid in set(self._read) - listed:
            del self._read[wid]
        return [
            self._read[wid] for wid in self._ids if wid in self._read and not self._read[wid].dock
        ]

    def _take_events(self) -> None:
        self.conn.sync()
        while self.conn.pending_events():
            self._note(self.conn.next_event())

    def _note(self, ev: Any) -> None:
        if ev.type == X.PropertyNotify:
            if ev.window.id == self.root.id:
                if ev.atom == self._client_list:
                    self._ids = None
            elif ev.atom in self._shown:
                self._stale.add(ev.window.id)
            return
        watched = getattr(ev, "event", None)
        if watched is None:
            return
        if watched.id == self.root.id:
            # A top-level window changed: a frame moved, was mapped or went, or a popup came.
            self._all_stale = True
        else:
            self._stale.add(watched.id)


def _ignore(*_: object) -> None:
    """A window that is gone before it could be watched: its listing drops it."""
