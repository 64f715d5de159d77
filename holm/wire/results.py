"""What an action answers: one result Struct per action (its `Result` class variable in
`holm.wire.actions`), the same whether the action ran as a batch step, through its own REST
route, or from a fork. The agent sends these over its socket; the engine, the HTTP layer and
the client read the same types, so no layer keeps a shape of its own (docs/api.md lists
them).

Also here: the value types several results share (a window, a file, a grep match, an exec's
outcome).
"""

from __future__ import annotations

from typing import Literal, TypeVar

import msgspec

from holm.errors import Internal
from holm.wire.values import Point, Selection


class _Result(msgspec.Struct, omit_defaults=True, kw_only=True):
    pass


# Values


class WindowInfo(msgspec.Struct, kw_only=True):
    id: str
    title: str = ""
    class_: str = msgspec.field(default="", name="class")
    x: int = 0
    y: int = 0
    width: int = 0
    height: int = 0
    active: bool = False
    minimised: bool = False


class FileInfo(msgspec.Struct, kw_only=True):
    name: str
    path: str
    type: Literal["file", "dir", "link", "other"]
    size: int
    mtime_ms: int


class GrepMatch(msgspec.Struct, kw_only=True):
    path: str
    line: int
    text: str


class Tab(msgspec.Struct, kw_only=True):
    tab: str
    title: str = ""
    url: str = ""


# Results


class Pointed(_Result):
    """Where the pointer ended; `seed` when a human motion chose its own, so a fork can
    draw the same path again."""

    at: Point
    seed: int | None = None


class ButtonHeld(_Result):
    release_at_ms: int
    at: Point
    seed: int | None = None


class Typed(_Result):
    typed: int


class Pressed(_Result):
    pressed: list[str]


class KeyHeld(_Result):
    key: str
    release_at_ms: int


class KeyReleased(_Result):
    key: str


class Waited(_Result):
    waited_ms: int


class Stillness(_Result):
    """`still` is false when the screen kept changing until `within_ms` ran out."""

    still: bool
    waited_ms: int
    hash: str


class FoundWindow(_Result):
    """A window an action waited for, opened, or arranged."""

    window: WindowInfo


class WindowList(_Result):
    """The windows of a screen; with `active`, only the one that has the keyboard (none
    when no window has it)."""

    windows: list[WindowInfo]


class WindowChanged(_Result):
    """A window focused, arranged or closed; `window` is its place after an arrange."""

    id: str
    closed: bool = False
    window: WindowInfo | None = None


class AppInfo(_Result):
    name: str
    description: str = ""


class AppList(_Result):
    apps: list[AppInfo]


class Captured(_Result):
    """A capture. With `unchanged: true` there is no `png_base64`."""

    hash: str
    width: int
    height: int
    unchanged: bool
    png_base64: str | None = None


class ClipboardView(_Result):
    """A selection read (`text` and its length) or set (its length only: a set is not
    echoed)."""

    selection: Selection
    length: int
    text: str | None = None


class PageOpened(_Result):
    tab: str
    url: str
    title: str = ""
    loaded: bool = False


class TabList(_Result):
    tabs: list[Tab]


class TabDone(_Result):
    tab: str
    closed: bool = False


class ExecResult(_Result, omit_defaults=False):
    """`{code, stdout, stderr, timed_out}` always, as docs/api.md promises."""

    code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    # Output past the cap was dropped; the cap is said in docs/api.md.
    truncated: bool = False

    @property
    def succeeded(self) -> bool:
        return self.code == 0 and not self.timed_out


class FileData(_Result):
    path: str
    size: int
    contents_base64: str


class FileSaved(_Result):
    path: str
    size: int


class FileList(_Result):
    path: str
    entries: list[FileInfo]


class GrepResult(_Result):
    matches: list[GrepMatch]
    # The search stopped at its `limit`.
    cut: bool


class GlobResult(_Result):
    paths: list[str]
    cut: bool


class NoResult(_Result):
    """The result of the actions not built yet (they answer `unsupported`)."""


ActionResult = (
    Point
    | Pointed
    | ButtonHeld
    | Typed
    | Pressed
    | KeyHeld
    | KeyReleased
    | Waited
    | Stillness
    | FoundWindow
    | WindowList
    | WindowChanged
    | AppList
    | Captured
    | ClipboardView
    | PageOpened
    | TabList
    | TabDone
    | ExecResult
    | FileData
    | FileSaved
    | FileList
    | GrepResult
    | GlobResult
    | NoResult
)

R = TypeVar("R")


def expect(result: object, kind: type[R]) -> R:
    """`result` as the type its action promises; a box that answered another is a fault of
    the runtime, not of the caller."""
    if not isinstance(result, kind):
        raise Internal(f"the box answered {type(result).__name__} where {kind.__name__} was due")
    return result


__all__ = [
    "ActionResult",
    "AppInfo",
    "AppList",
    "ButtonHeld",
    "Captured",
    "ClipboardView",
    "ExecResult",
    "FileData",
    "FileInfo",
    "FileList",
    "FileSaved",
    "FoundWindow",
    "GlobResult",
    "GrepMatch",
    "GrepResult",
    "KeyHeld",
    "KeyReleased",
    "NoResult",
    "PageOpened",
    "Pointed",
    "Pressed",
    "Stillness",
    "Tab",
    "TabDone",
    "TabList",
    "Typed",
    "Waited",
    "WindowChanged",
    "WindowInfo",
    "WindowList",
    "expect",
]
