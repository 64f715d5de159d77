"""Which screen an application on the box's accessibility bus shows on.

The bus is the box's: every screen's applications are on it, and AT-SPI says of each only
its process. Each screen is an X display of its own, so a process shows on the display
that holds its windows (`_NET_WM_PID`); a process with no window there (or none that names
it) shows on the display its `DISPLAY` names, as every program the box starts has its
screen's. Chromium writes its command line over its environment, so for it the windows are
what tells. A process neither tells of is on every screen: nothing says which it is on.

Everything here blocks; the widgets' thread runs it.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from Xlib import error
from Xlib.display import Display

from holm.adapters.agent.windows import window_pids


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
    """The processes with windows on each display, as they were when it was read (once an
    operation)."""

    def __init__(self, displays: Iterable[str], windows: DisplayWindows) -> None:
        self.windows: dict[str, set[int]] = {d: windows.pids(d) for d in displays}

    def on(self, pid: int | None, display: str) -> bool:
        if pid is None:
            return True
        if pid in self.windows.get(display, set()):
            return True
        if any(pid in pids for d, pids in self.windows.items() if d != display):
            return False
        named = environ_display(pid)
        return named is None or same_display(named, display)


def environ_display(pid: int) -> str | None:
    """The `DISPLAY` process `pid` started with, if it can be read."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    for entry in environ.split(b"\0"):
        if entry.startswith(b"DISPLAY="):
            return entry[len(b"DISPLAY=") :].decode(errors="replace")
    return None


def same_display(named: str, display: str) -> bool:
    """Whether a `DISPLAY` value names X display `display` (`:N`): `:N`, `:N.0` and
    `unix:N` are one display."""
    host, _, rest = named.rpartition(":")
    return host in ("", "unix") and f":{rest.split('.', 1)[0]}" == display


__all__ = ["DisplayWindows", "WhereShown", "environ_display", "same_display"]
