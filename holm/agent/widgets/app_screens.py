"""Which screen an application on the box's accessibility bus shows on.

The bus is the box's: every screen's applications are on it, and AT-SPI says of each only
its process. Each screen is an X display of its own, and every program the box starts has
its screen's in `DISPLAY`: a process shows on the display its environment names, read
from /proc, with no round trip to anything. Chromium writes its command line over its
environment; a process whose environment names no display shows on the display that holds
its windows (`_NET_WM_PID`). A process neither tells of is on every screen: nothing says
which it is on.

Everything here blocks; the widgets' thread runs it.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from Xlib import error
from Xlib.display import Display

from holm.agent.x11.windows import window_pids


class DisplayWindows:
    """Connections to the box's displays, kept open: opening one costs tens of
    milliseconds, more than the rest of a short operation. Used from the widgets' thread
    only."""

    def __init__(self) -> None:
        self._conns: dict[str, Display] = {}

    def pids(self, display: str) -> set[int]:
        """The processes with windows on `display` now (none when it cannot be reached)."""
        try:
            conn = self._conns.get(display)
            if conn is None:
                conn = self._conns[display] = Display(display)
            return window_pids(conn)
        except (error.DisplayError, error.ConnectionClosedError, OSError):
            self._drop(display)
            return set()

    def _drop(self, display: str) -> None:
        conn = self._conns.pop(display, None)
        if conn is not None:
            with suppress(Exception):
                conn.close()


class WhereShown:
    """Which display each process shows on, for one operation: the displays' windows are
    read once, and only if a process's environment does not tell."""

    def __init__(self, displays: Iterable[str], windows: DisplayWindows) -> None:
        self._displays = list(displays)
        self._windows = windows
        self._read: dict[str, set[int]] | None = None

    @property
    def windows(self) -> dict[str, set[int]]:
        """The processes with windows on each display."""
        if self._read is None:
            self._read = {d: self._windows.pids(d) for d in self._displays}
        return self._read

    def on(self, pid: int | None, display: str) -> bool:
        if pid is None:
            return True
        named = environ_display(pid)
        if named is not None:
            return same_display(named, display)
        if pid in self.windows.get(display, set()):
            return True
        return not any(pid in pids for d, pids in self.windows.items() if d != display)


def environ_display(pid: int) -> str | None:
    """The `DISPLAY` process `pid` started with, if it can be read; on a Wayland box, its
    `WAYLAND_DISPLAY` (the screen's compositor's socket, holm/agent/wayland/sway_up.py)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    for name in (b"DISPLAY=", b"WAYLAND_DISPLAY="):
        for entry in environ.split(b"\0"):
            if entry.startswith(name):
                return entry[len(name) :].decode(errors="replace")
    return None


def same_display(named: str, display: str) -> bool:
    """Whether a `DISPLAY` value names X display `display` (`:N`): `:N`, `:N.0` and
    `unix:N` are one display. A Wayland screen's display is its socket's path."""
    if display.startswith("/"):
        return named == display
    host, _, rest = named.rpartition(":")
    return host in ("", "unix") and f":{rest.split('.', 1)[0]}" == display


__all__ = ["DisplayWindows", "WhereShown", "environ_display", "same_display"]
