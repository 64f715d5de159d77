"""Windows through EWMH: what the window manager manages, and asking it to change them.

Every function takes an Xlib display connection and blocks; each screen calls them from
its own windows thread, on its own connection.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import msgspec
from Xlib import X, error
from Xlib.display import Display
from Xlib.protocol import event

from holm.errors import BadRequest, NotFound, Timeout
from holm.wire.actions import Arrange
from holm.wire.results import WindowInfo

_ICONIC_STATE = 3
# _NET_WM_STATE actions
_REMOVE, _ADD = 0, 1
# The requests come from a pager (source 2), which window managers obey without the
# focus-stealing checks they apply to applications.
_SOURCE_PAGER = 2
POLL_S = 0.02


class ClientWindow(msgspec.Struct, kw_only=True):
    """A managed window as read from the X server, with what WindowInfo does not carry."""

    id: int
    title: str
    class_: str
    instance: str
    x: int
    y: int
    width: int
    height: int
    map_state: int
    states: list[str]
    # A panel (the `dock` feature's): part of the desktop, not a window an agent drives.
    dock: bool = False

    def info(self, active: int | None) -> WindowInfo:
        return WindowInfo(
            id=format_id(self.id),
            title=self.title,
            class_=self.class_,
            x=self.x,
            y=self.y,
            width=self.width,
            height=self.height,
            active=self.id == active,
            minimised="_NET_WM_STATE_HIDDEN" in self.states or self.map_state != X.IsViewable,
        )

    def matches(self, class_: str | None, title: str | None) -> bool:
        if class_ is not None and class_.lower() not in (
            self.class_.lower(),
            self.instance.lower(),
        ):
            return False
        return title is None or title.lower() in self.title.lower()


def format_id(window: int) -> str:
    return f"0x{window:x}"


def parse_id(window: str) -> int:
    try:
        return int(window, 16) if window.lower().startswith("0x") else int(window)
    except ValueError:
        raise BadRequest(f"{window!r} is not a window id (like 0x1a00003)") from None


def _atom(conn: Display, name: str) -> int:
    # Kept by the connection after the first ask: an atom's number never changes.
    return int(conn.get_atom(name))


def _property(conn: Display, window: Any, name: str) -> Any:
    prop = window.get_full_property(_atom(conn, name), X.AnyPropertyType)
    return None if prop is None else prop.value


def wm_running(conn: Display) -> bool:
    return _property(conn, conn.screen().root, "_NET_SUPPORTING_WM_CHECK") is not None


def client_ids(conn: Display) -> list[int]:
    value = _property(conn, conn.screen().root, "_NET_CLIENT_LIST")
    return [int(w) for w in value] if value is not None else []


def window_pids(conn: Display) -> set[int]:
    """The processes (`_NET_WM_PID`, which GTK, Qt and Chromium set) of the display's
    windows."""
    pids: set[int] = set()
    for wid in client_ids(conn):
        try:
            value = _property(conn, conn.create_resource_object("window", wid), "_NET_WM_PID")
        except error.BadWindow:
            continue
        if value is not None and len(value):
            pids.add(int(value[0]))
    return pids


def active_id(conn: Display) -> int | None:
    value = _property(conn, conn.screen().root, "_NET_ACTIVE_WINDOW")
    return int(value[0]) if value is not None and len(value) and value[0] else None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def read_window(conn: Display, wid: int) -> ClientWindow | None:
    """The window's state, or None when it is gone."""
    root = conn.screen().root
    win = conn.create_resource_object("window", wid)
    try:
        wm_class = win.get_wm_class() or ("", "")
        title = _text(_property(conn, win, "_NET_WM_NAME")) or _text(win.get_wm_name())
        geometry = win.get_geometry()
        origin = root.translate_coords(win, 0, 0)
        map_state = win.get_attributes().map_state
        state_atoms = _property(conn, win, "_NET_WM_STATE")
        states = [conn.get_atom_name(a) for a in state_atoms] if state_atoms is not None else []
        types = _property(conn, win, "_NET_WM_WINDOW_TYPE")
        dock = types is not None and _atom(conn, "_NET_WM_WINDOW_TYPE_DOCK") in types
    except (error.BadWindow, error.BadDrawable, error.BadMatch):
        return None
    return ClientWindow(
        id=wid,
        title=title,
        class_=_text(wm_class[1]),
        instance=_text(wm_class[0]),
        x=int(origin.x),
        y=int(origin.y),
        width=int(geometry.width),
        height=int(geometry.height),
        map_state=int(map_state),
        states=states,
        dock=dock,
    )


def client_windows(conn: Display) -> list[ClientWindow]:
    found = (read_window(conn, wid) for wid in client_ids(conn))
    return [w for w in found if w is not None and not w.dock]


def active_window(conn: Display) -> WindowInfo | None:
    active = active_id(conn)
    if active is None:
        return None
    found = read_window(conn, active)
    return None if found is None else found.info(active)


def get_window(conn: Display, window: str) -> ClientWindow:
    wid = parse_id(window)
    found = read_window(conn, wid) if wid in client_ids(conn) else None
    if found is None:
        raise NotFound(f"no window {window} on this screen")
    return found


def find_window(
    conn: Display, class_: str | None, title: str | None, ignore: set[int]
) -> WindowInfo | None:
    """The first mapped window that matches and is not in `ignore`."""
    for w in client_windows(conn):
        if w.id not in ignore and w.map_state == X.IsViewable and w.matches(class_, title):
            return w.info(active_id(conn))
    return None


def no_window(class_: str | None, title: str | None, within_ms: int) -> Timeout:
    what = [f"class {class_!r}"] if class_ else []
    what += [f"title {title!r}"] if title else []
    return Timeout(f"no window with {' and '.join(what) or 'any name'} within {within_ms} ms")


def _client_message(conn: Display, wid: int, name: str, data: list[int]) -> None:
    root = conn.screen().root
    message = event.ClientMessage(
        window=conn.create_resource_object("window", wid),
        client_type=_atom(conn, name),
        data=(32, [*data, 0, 0, 0, 0, 0][:5]),
    )
    root.send_event(message, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
    conn.sync()


def focus(conn: Display, window: str) -> None:
    target = get_window(conn, window)
    _client_message(conn, target.id, "_NET_ACTIVE_WINDOW", [_SOURCE_PAGER, X.CurrentTime, 0])
    _settle(conn, target.id, lambda w: active_id(conn) == w.id)


def close(conn: Display, window: str) -> None:
    target = get_window(conn, window)
    _client_message(conn, target.id, "_NET_CLOSE_WINDOW", [X.CurrentTime, _SOURCE_PAGER])


def _set_maximised(conn: Display, wid: int, on: bool) -> None:
    _client_message(
        conn,
        wid,
        "_NET_WM_STATE",
        [
            _ADD if on else _REMOVE,
            _atom(conn, "_NET_WM_STATE_MAXIMIZED_VERT"),
            _atom(conn, "_NET_WM_STATE_MAXIMIZED_HORZ"),
            _SOURCE_PAGER,
        ],
    )


def _move_resize(
    conn: Display, wid: int, x: int | None, y: int | None, width: int | None, height: int | None
) -> None:
    flags = 0
    values = []
    for bit, value in enumerate((x, y, width, height)):
        if value is not None:
            flags |= 1 << (8 + bit)
        values.append(value or 0)
    # Gravity 1 (NorthWest): x, y name the outer frame's top-left corner.
    _client_message(
        conn, wid, "_NET_MOVERESIZE_WINDOW", [1 | flags | (_SOURCE_PAGER << 12), *values]
    )


def arrange(conn: Display, window: str, how: Arrange) -> WindowInfo:
    target = get_window(conn, window)
    wid = target.id
    maximised = _is_maximised(target)
    done: Callable[[ClientWindow], bool]
    match how.how:
        case "at":
            if how.to is None:
                raise BadRequest("arrange `at` needs `to`")
            if maximised:
                _set_maximised(conn, wid, False)
            # `to` is where the window's own area (what `windows` reports, where clicks
            # land) goes; the request places the frame, which starts above and left of it
            # by the decorations' size.
            left, top = _frame_offset(conn, wid)
            _move_resize(conn, wid, how.to.x - left, how.to.y - top, None, None)
            done = _moved_to(how.to.x, how.to.y)
        case "size":
            if how.width is None or how.height is None or how.width < 1 or how.height < 1:
                raise BadRequest("arrange `size` needs a positive `width` and `height`")
            if maximised:
                _set_maximised(conn, wid, False)
            _move_resize(conn, wid, None, None, how.width, how.height)
            resized = _resized_from(target.width, target.height)

            def done(c: ClientWindow) -> bool:
                return resized(c) or (c.width, c.height) == (how.width, how.height)

        case "maximise":
            _set_maximised(conn, wid, True)
            resized = _resized_from(target.width, target.height)

            def done(c: ClientWindow) -> bool:
                # The state changes before the size does: wait for both.
                return _is_maximised(c) and (maximised or resized(c))

        case "minimise":
            _client_message(conn, wid, "WM_CHANGE_STATE", [_ICONIC_STATE])
            done = _is_minimised
        case "restore":
            if target.map_state != X.IsViewable:
                _client_message(conn, wid, "_NET_ACTIVE_WINDOW", [_SOURCE_PAGER, X.CurrentTime, 0])
            if maximised:
                _set_maximised(conn, wid, False)
            resized = _resized_from(target.width, target.height)

            def done(c: ClientWindow) -> bool:
                return _is_restored(c) and (not maximised or resized(c))

    return _settle(conn, wid, done).info(active_id(conn))


def _is_maximised(c: ClientWindow) -> bool:
    return "_NET_WM_STATE_MAXIMIZED_VERT" in c.states


def _is_minimised(c: ClientWindow) -> bool:
    return bool(c.map_state != X.IsViewable)


def _is_restored(c: ClientWindow) -> bool:
    return not _is_minimised(c) and not _is_maximised(c)


def _resized_from(width: int, height: int) -> Callable[[ClientWindow], bool]:
    # The client may round a size to its increments (xterm's character cells): any change
    # is the window manager's answer.
    return lambda c: (c.width, c.height) != (width, height)


def _moved_to(x: int, y: int) -> Callable[[ClientWindow], bool]:
    return lambda c: (c.x, c.y) == (x, y)


def _frame_offset(conn: Display, wid: int) -> tuple[int, int]:
    """The left and top size of the window manager's frame around a window
    (`_NET_FRAME_EXTENTS`), (0, 0) when it has none."""
    win = conn.create_resource_object("window", wid)
    extents = _property(conn, win, "_NET_FRAME_EXTENTS")
    if extents is None or len(extents) < 4:
        return 0, 0
    left, _right, top, _bottom = (int(v) for v in extents)
    return left, top


def _settle(
    conn: Display, wid: int, done: Callable[[ClientWindow], bool], within_s: float = 2.0
) -> ClientWindow:
    """Wait (briefly) until the window manager has done what was asked."""
    deadline = time.monotonic() + within_s
    while True:
        found = read_window(conn, wid)
        if found is None:
            raise NotFound(f"window {format_id(wid)} is gone")
        if done(found) or time.monotonic() >= deadline:
            return found
        time.sleep(POLL_S)


__all__ = [
    "ClientWindow",
    "active_window",
    "arrange",
    "client_windows",
    "close",
    "find_window",
    "focus",
    "format_id",
    "get_window",
    "no_window",
    "parse_id",
    "window_pids",
    "wm_running",
]
