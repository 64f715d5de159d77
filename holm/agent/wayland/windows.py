"""A Wayland screen's windows, from sway's tree (sway_ipc.py): listed, found, focused,
arranged and closed by sway's own commands. A window's id is its container's, written as
the X11 wing writes its ids (`0x…`)."""

from __future__ import annotations

from typing import Any

from holm.agent.wayland.sway_ipc import SwayIpc, leaves
from holm.agent.x11.windows import format_id, parse_id
from holm.errors import BadRequest, Failed, NotFound
from holm.wire.actions import Arrange
from holm.wire.results import WindowInfo


def _names(node: dict[str, Any]) -> tuple[str, ...]:
    """What a window's class may be matched by: its app_id, or an XWayland window's class
    and instance (as the X11 wing matches either)."""
    x11 = node.get("window_properties") or {}
    return tuple(n for n in (node.get("app_id"), x11.get("class"), x11.get("instance")) if n)


def _info(node: dict[str, Any], minimised: bool) -> WindowInfo:
    rect = node.get("rect", {})
    x11 = node.get("window_properties") or {}
    return WindowInfo(
        id=format_id(int(node["id"])),
        title=node.get("name") or "",
        class_=node.get("app_id") or x11.get("class") or "",
        x=int(rect.get("x", 0)),
        y=int(rect.get("y", 0)),
        width=int(rect.get("width", 0)),
        height=int(rect.get("height", 0)),
        active=bool(node.get("focused")),
        minimised=minimised,
    )


def _scratchpad_ids(tree: dict[str, Any]) -> set[int]:
    for output in tree.get("nodes", []):
        for workspace in output.get("nodes", []):
            if workspace.get("name") == "__i3_scratch":
                return {int(n["id"]) for n in leaves(workspace)}
    return set()


def listing(ipc: SwayIpc) -> list[WindowInfo]:
    return [w for w, _ in named_listing(ipc)]


def named_listing(ipc: SwayIpc) -> list[tuple[WindowInfo, tuple[str, ...]]]:
    """Each window, with the names its class may be matched by."""
    tree = ipc.tree()
    hidden = _scratchpad_ids(tree)
    return [(_info(n, int(n["id"]) in hidden), _names(n)) for n in leaves(tree)]


def matches(
    window: WindowInfo, names: tuple[str, ...], class_: str | None, title: str | None
) -> bool:
    if class_ is not None and class_.lower() not in (n.lower() for n in names):
        return False
    return title is None or title.lower() in window.title.lower()


def get_window(ipc: SwayIpc, window: str) -> WindowInfo:
    wid = format_id(parse_id(window))
    for found in listing(ipc):
        if found.id == wid:
            return found
    raise NotFound(f"no window {window} on this screen")


def _run(ipc: SwayIpc, window: str, command: str) -> None:
    wid = parse_id(window)
    get_window(ipc, window)
    for answer in ipc.command(f"[con_id={wid}] {command}"):
        if not answer.get("success"):
            raise Failed(f"sway refused `{command}` for window {window}: {answer.get('error')}")


def focus(ipc: SwayIpc, window: str) -> None:
    found = get_window(ipc, window)
    if found.minimised:
        _run(ipc, window, "scratchpad show")
    _run(ipc, window, "focus")


def close(ipc: SwayIpc, window: str) -> None:
    _run(ipc, window, "kill")


def arrange(ipc: SwayIpc, window: str, how: Arrange) -> WindowInfo:
    """As on X11: `at` and `size` float the window (a tiled one has no place of its own),
    `maximise` tiles it again (alone on the screen, it fills it), `minimise` sends it to
    the scratchpad and `restore` brings it back, tiled."""
    found = get_window(ipc, window)
    match how.how:
        case "at":
            if how.to is None:
                raise BadRequest("arrange `at` needs `to`")
            _run(ipc, window, f"floating enable, move absolute position {how.to.x} {how.to.y}")
        case "size":
            if not (how.width and how.height and how.width > 0 and how.height > 0):
                raise BadRequest("arrange `size` needs a positive `width` and `height`")
            _run(ipc, window, f"floating enable, resize set {how.width} {how.height}")
        case "maximise":
            if found.minimised:
                _run(ipc, window, "scratchpad show")
            _run(ipc, window, "floating disable")
        case "minimise":
            if not found.minimised:
                _run(ipc, window, "move scratchpad")
        case "restore":
            if found.minimised:
                _run(ipc, window, "scratchpad show")
            _run(ipc, window, "floating disable")
    return get_window(ipc, window)
