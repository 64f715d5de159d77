"""What an action answers: one result Struct per action (its `Result` class variable in
`holm.wire.actions`), the same whether the action ran as a batch step, through its own REST
route, or from a fork. The agent sends these over its socket; the engine, the HTTP layer and
the client read the same types, so no layer keeps a shape of its own (docs/api.md lists
them).

Also here: the value types several results share (a window, a file, a grep match, an exec's
outcome).
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import msgspec

from holm.errors import Internal
from holm.wire.values import Point, Region, Selection


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


class Tab(msgspec.Struct, kw_only=True, omit_defaults=True):
    tab: str
    title: str = ""
    url: str = ""
    label: str | None = None


class Box(msgspec.Struct, kw_only=True):
    """Where an element is in its page's viewport, in CSS pixels."""

    x: float
    y: float
    width: float
    height: float


class Element(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An element of a page as a person would name it: its role and accessible name."""

    role: str
    name: str
    tag: str = ""
    box: Box | None = None
    visible: bool = True
    value: str | None = None
    checked: bool | None = None
    disabled: bool = False


class Link(msgspec.Struct, kw_only=True):
    text: str
    url: str


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


class Recording(_Result):
    """A screen's recording: the one running (`recording: true`), else the last one, whose
    MP4 stays in the box at `path` (no `path`: none was made since the desktop came up)."""

    recording: bool
    path: str | None = None
    fps: int | None = None
    width: int | None = None
    height: int | None = None
    started_at_ms: int | None = None
    stopped_at_ms: int | None = None


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
    label: str | None = None


class TabList(_Result):
    tabs: list[Tab]


class TabDone(_Result):
    tab: str
    closed: bool = False


class ElementDone(_Result):
    """An element operation: the element it chose (none for `history`, a `scroll` of the
    page or a `wait_for ... gone`), the page's URL after it, whether the page went to
    another document or URL, and the controls whose state changed (all of them, up to a
    cap, after a navigation). `options` answers `options` and `choose`; `matched` says which
    query of a `wait_for` (`query` or one of `or`) was met."""

    op: str
    url: str
    element: Element | None = None
    navigated: bool = False
    changed: list[Element] = msgspec.field(default_factory=list)
    options: list[str] | None = None
    matched: str | None = None
    # The message of a dialog the operation opened (answer it with a `dialog` action).
    dialog: str | None = None


class Node(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A native widget, as the box's accessibility bus (AT-SPI) tells it: its role (`push
    button`, `text`, `entry`, …), its name, and when it has none the text of the label
    that names it (`label`); its value (a field's text, a slider's number), its states
    (`focused`, `editable`, `showing`, …), its rectangle on the screen, the actions it can
    do, and `path`, which names it again in a later `node` query. `children` is filled by
    `tree` only."""

    role: str
    name: str
    path: str
    label: str | None = None
    value: str | None = None
    states: list[str] = msgspec.field(default_factory=list)
    bounds: Region | None = None
    actions: list[str] = msgspec.field(default_factory=list)
    children: list[Node] = msgspec.field(default_factory=list)


class NodeDone(_Result):
    """A widget operation: the widget it acted on (`focus`, `invoke`, `set`, read again
    after), or the widgets found, best first (`find`), or the applications' trees
    (`tree`); `cut` when a limit left some out."""

    op: str
    node: Node | None = None
    # `find` and `tree` answer it always, empty when nothing matched (None: another op),
    # so that a reader's `.nodes[]` works on a find that found nothing.
    nodes: list[Node] | None = None
    action: str | None = None
    cut: bool = False


class Found(_Result):
    """The elements a query found, best first; `total` counts all of them."""

    elements: list[Element]
    total: int


class PageSnapshot(_Result):
    """The controls of a page (or of the element `scope` found)."""

    tab: str
    url: str
    title: str
    controls: list[Element]
    cut: bool = False


class PageText(_Result):
    tab: str
    url: str
    title: str
    format: str
    text: str
    links: list[Link] = msgspec.field(default_factory=list)
    cut: bool = False


class Evaluated(_Result, omit_defaults=False):
    """`value` is the expression's value as JSON; past `limit` characters of its JSON it is
    that text cut, with `cut: true`."""

    value: Any = None
    type: str = "undefined"
    cut: bool = False


class PageShotTaken(_Result):
    tab: str
    format: str
    width: int
    height: int
    data_base64: str


class ConsoleMessage(msgspec.Struct, kw_only=True, omit_defaults=True):
    level: str
    text: str
    at_ms: int = 0
    url: str | None = None


class ConsoleLog(_Result, omit_defaults=False):
    messages: list[ConsoleMessage]
    cut: bool = False


class Cookie(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str
    value: str
    domain: str
    path: str = "/"
    http_only: bool = False
    secure: bool = False
    same_site: str | None = None
    expires: float | None = None


class CookieList(_Result, omit_defaults=False):
    """The cookies listed (`get`), or how many were set or cleared (`changed`)."""

    cookies: list[Cookie] = msgspec.field(default_factory=list)
    changed: int = 0


class BrowserState(_Result):
    """A saved state: its counts, and `session_json` (Playwright's storage state) when it
    was not kept under a name."""

    cookies: int
    origins: int
    session_json: str | None = None
    name: str | None = None


class StateLoaded(_Result, omit_defaults=False):
    cookies: int
    origins: int


class DialogDone(_Result):
    """The dialog that was open (`kind`: alert, confirm, prompt, beforeunload) and what was
    done to it."""

    accepted: bool
    kind: str = ""
    message: str = ""


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
    | Recording
    | ClipboardView
    | PageOpened
    | TabList
    | TabDone
    | ElementDone
    | NodeDone
    | Found
    | PageSnapshot
    | PageText
    | Evaluated
    | PageShotTaken
    | DialogDone
    | CookieList
    | ConsoleLog
    | BrowserState
    | StateLoaded
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
    "Box",
    "BrowserState",
    "ButtonHeld",
    "Captured",
    "ClipboardView",
    "ConsoleLog",
    "ConsoleMessage",
    "Cookie",
    "CookieList",
    "DialogDone",
    "Element",
    "ElementDone",
    "Evaluated",
    "ExecResult",
    "FileData",
    "FileInfo",
    "FileList",
    "FileSaved",
    "Found",
    "FoundWindow",
    "GlobResult",
    "GrepMatch",
    "GrepResult",
    "KeyHeld",
    "KeyReleased",
    "Link",
    "NoResult",
    "Node",
    "NodeDone",
    "PageOpened",
    "PageShotTaken",
    "PageSnapshot",
    "PageText",
    "Pointed",
    "Pressed",
    "Recording",
    "StateLoaded",
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
