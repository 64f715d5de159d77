"""What the tests that drive a box's `Desktop` directly share (tests/agent, tests/local,
tests/docker): every in-box operation is one action and one result (`Desktop.act`); these
name the ones the tests do often, narrow the result to the type the action promises, and
check what a result says of itself (a size, a window ID), so that each test reads as what
it does."""

from __future__ import annotations

import base64
from typing import TypeVar

from holm.adapters.base import Desktop
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.values import Point, Selection

R = TypeVar("R")


async def act(desktop: Desktop, screen: int, action: a.Action, kind: type[R]) -> R:
    """Do `action`; its result, which must be `kind`."""
    return r.expect(await desktop.act(screen, action), kind)


# Commands and files (no screen)


async def run(desktop: Desktop, *argv: str, timeout_ms: int = 10_000) -> r.ExecResult:
    what = a.ExecWhat(argv=list(argv), timeout_ms=timeout_ms)
    return await act(desktop, 0, a.Exec(what=what), r.ExecResult)


async def read_bytes(desktop: Desktop, path: str) -> bytes:
    data = await act(desktop, 0, a.ReadFile(path=path), r.FileData)
    contents = base64.b64decode(data.contents_base64)
    assert (data.path, data.size) == (path, len(contents)), data
    return contents


async def write_bytes(desktop: Desktop, path: str, contents: bytes) -> r.FileSaved:
    what = a.WriteWhat(path=path, contents_base64=base64.b64encode(contents).decode())
    saved = await act(desktop, 0, a.WriteFile(what=what), r.FileSaved)
    assert saved == r.FileSaved(path=path, size=len(contents))
    return saved


async def list_dir(desktop: Desktop, path: str) -> list[r.FileInfo]:
    listed = await act(desktop, 0, a.ListFiles(path=path), r.FileList)
    assert listed.path == path
    return listed.entries


# Screens


async def cursor(desktop: Desktop, screen: int) -> Point:
    return await act(desktop, screen, a.Cursor(), Point)


async def windows(desktop: Desktop, screen: int) -> list[r.WindowInfo]:
    return (await act(desktop, screen, a.Windows(), r.WindowList)).windows


async def active_window(desktop: Desktop, screen: int) -> r.WindowInfo | None:
    found = (await act(desktop, screen, a.Windows(active=True), r.WindowList)).windows
    assert len(found) <= 1, found
    return found[0] if found else None


async def launch(desktop: Desktop, screen: int, app: str, *args: str) -> r.WindowInfo:
    action = a.Launch(app=app, args=list(args))
    return (await act(desktop, screen, action, r.FoundWindow)).window


async def focus(desktop: Desktop, screen: int, window: str) -> None:
    action = a.OnWindow(window=window, what=a.WindowOp(do="focus"))
    assert await act(desktop, screen, action, r.WindowChanged) == r.WindowChanged(id=window)


async def arrange(desktop: Desktop, screen: int, window: str, how: a.Arrange) -> r.WindowInfo:
    """Where the window is after the arrange, as the result tells."""
    action = a.OnWindow(window=window, what=a.WindowOp(do="arrange", how=how))
    changed = await act(desktop, screen, action, r.WindowChanged)
    assert changed.id == window and not changed.closed and changed.window is not None, changed
    assert changed.window.id == window
    return changed.window


async def close_window(desktop: Desktop, screen: int, window: str) -> None:
    action = a.OnWindow(window=window, what=a.WindowOp(do="close"))
    closed = await act(desktop, screen, action, r.WindowChanged)
    assert closed == r.WindowChanged(id=window, closed=True)


async def clipboard(desktop: Desktop, screen: int, selection: Selection = "clipboard") -> str:
    view = await act(desktop, screen, a.Clipboard(selection=selection), r.ClipboardView)
    assert view.text is not None and view.selection == selection, view
    assert view.length == len(view.text.encode())
    return view.text


async def set_clipboard(
    desktop: Desktop, screen: int, text: str, selection: Selection = "clipboard"
) -> None:
    action = a.Clipboard(selection=selection, text=text)
    view = await act(desktop, screen, action, r.ClipboardView)
    # A set is not echoed: its length only.
    assert view == r.ClipboardView(selection=selection, length=len(text.encode()))


async def tabs(desktop: Desktop, screen: int) -> list[r.Tab]:
    return (await act(desktop, screen, a.Tabs(), r.TabList)).tabs
