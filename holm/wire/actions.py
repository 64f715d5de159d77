"""The actions of a batch (`POST …/screens/{screen}/actions`), one tagged Struct per `type`.

Every in-box operation is one action: a batch step, a REST route that runs one operation
(exec, a file, a window, the clipboard) and a fork's replayed step all send the same Struct
to the box and get back the same result, the action's `Result` (`holm.wire.results`).
Limits are `msgspec.Meta` constraints, so a value out of range is refused with
`bad_request` when the body is decoded, before anything is recorded, and the OpenAPI
document shows them. A trace's `acted` entry keeps the action exactly as decoded here, so a
fork can do it again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from holm.errors import BadRequest
from holm.wire import results as r
from holm.wire.spec import Feature
from holm.wire.values import Button, Modifier, Motion, Point, Region, Selection

MAX_HOLD_MS = 60_000
DEFAULT_HOLD_MS = 10_000
MAX_WAIT_MS = 30_000
MAX_EXEC_MS = 600_000
MAX_TYPE_DELAY_MS = 1000
MIN_SCALE = 1
MAX_SCALE = 400
MAX_SCROLL_NOTCHES = 100
# What one wheel notch scrolls a Chromium page on X11 (measured: tests/agent/
# test_pointer_counts.py); a scroll in pixels where no page takes it is made of these.
PIXELS_PER_NOTCH = 120
MAX_SCROLL_PIXELS = MAX_SCROLL_NOTCHES * PIXELS_PER_NOTCH // 2
MAX_CLICKS = 3
MAX_LIST_LIMIT = 10_000
DEFAULT_RECORD_FPS = 12
MAX_RECORD_FPS = 30

HoldMs = Annotated[int, Meta(ge=1, le=MAX_HOLD_MS)]
WaitMs = Annotated[int, Meta(ge=0, le=MAX_WAIT_MS)]
# The spec says these "stop at" 30 s: a larger value is capped where it is used, not refused.
CappedMs = Annotated[int, Meta(ge=0)]
Scale = Annotated[int, Meta(ge=MIN_SCALE, le=MAX_SCALE)]
Notches = Annotated[int, Meta(ge=-MAX_SCROLL_NOTCHES, le=MAX_SCROLL_NOTCHES)]
ScrollPixels = Annotated[int, Meta(ge=-MAX_SCROLL_PIXELS, le=MAX_SCROLL_PIXELS)]
ListLimit = Annotated[int, Meta(ge=1, le=MAX_LIST_LIMIT)]
Fps = Annotated[int, Meta(ge=1, le=MAX_RECORD_FPS)]
NonEmpty = Annotated[str, Meta(min_length=1)]


class _Action(
    msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, tag_field="type", kw_only=True
):
    # What the box answers when this action runs.
    Result: ClassVar[type[Any]] = r.NoResult


# Input


class Move(_Action, tag="move"):
    Result = r.Pointed

    to: Point
    motion: Motion = "instant"
    seed: int | None = None
    pause_ms: WaitMs = 0


class Click(_Action, tag="click"):
    """`count` clicks in a row, as one multiple click (3: a triple click, which selects a
    paragraph); `held` modifiers stay down for all of them."""

    Result = r.Pointed

    at: Point | None = None
    button: Button = "left"
    held: list[Modifier] = msgspec.field(default_factory=list)
    motion: Motion = "instant"
    seed: int | None = None
    count: Annotated[int, Meta(ge=1, le=MAX_CLICKS)] = 1


class DoubleClick(_Action, tag="double_click"):
    Result = r.Pointed

    at: Point | None = None
    button: Button = "left"
    held: list[Modifier] = msgspec.field(default_factory=list)
    motion: Motion = "instant"
    seed: int | None = None


class Drag(_Action, tag="drag"):
    Result = r.Pointed

    to: Point
    from_: Point | None = msgspec.field(default=None, name="from")
    button: Button = "left"
    held: list[Modifier] = msgspec.field(default_factory=list)
    motion: Motion = "instant"
    seed: int | None = None


class Path(_Action, tag="path"):
    Result = r.Pointed

    through: Annotated[list[Point], Meta(min_length=2)]
    button: Button = "left"
    held: list[Modifier] = msgspec.field(default_factory=list)
    motion: Motion = "instant"
    seed: int | None = None


class MouseDown(_Action, tag="mouse_down"):
    Result = r.ButtonHeld

    at: Point | None = None
    button: Button = "left"
    motion: Motion = "instant"
    seed: int | None = None
    hold_ms: HoldMs | None = None


class MouseUp(_Action, tag="mouse_up"):
    Result = r.Pointed

    at: Point | None = None
    button: Button = "left"


class Scroll(_Action, tag="scroll"):
    """`dx`/`dy` in wheel notches, and `dx_px`/`dy_px` in pixels: a wheel event of exactly
    that many pixels on the Chromium page under the pointer, or where there is none, the
    nearest number of notches (PIXELS_PER_NOTCH each, at least one); docs/api.md. `held`
    modifiers stay down (ctrl: zoom, shift: sideways)."""

    Result = r.Pointed

    at: Point | None = None
    dx: Notches = 0
    dy: Notches = 0
    dx_px: ScrollPixels = 0
    dy_px: ScrollPixels = 0
    held: list[Modifier] = msgspec.field(default_factory=list)


def notches_of(pixels: int) -> int:
    """The wheel notches nearest `pixels` where no page takes pixels: at least one for
    any pixel asked, so that a scroll asked moves."""
    if pixels == 0:
        return 0
    notches = max(1, round(abs(pixels) / PIXELS_PER_NOTCH))
    return notches if pixels > 0 else -notches


# A secret's name (beyond the spec): what a step gives instead of a value it must not leave
# in the trace. The value comes with the request (`secrets` of a batch or a fork) or from
# the workspace's secrets (`PUT /v1/secrets/{name}`); the trace keeps the name only.
# Checked in `__post_init__` rather than as a schema pattern: the pattern would be repeated in
# every MCP tool that takes one (tools/list is paid on every request of a model).
SecretName = str
_SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_secret_name(name: str) -> None:
    if not _SECRET_NAME.fullmatch(name):
        raise ValueError(
            f"bad secret name {name!r}: letters, digits, _ . - (a letter or _ first), at most 64"
        )


class SecretRef(msgspec.Struct, forbid_unknown_fields=True):
    """A secret by name where a value goes (an `exec` argument or environment variable)."""

    secret: SecretName

    def __post_init__(self) -> None:
        check_secret_name(self.secret)


def _one_of_text_or_secret(text: str, secret: str | None) -> None:
    if secret is not None:
        check_secret_name(secret)
        if text:
            raise ValueError("give `text` or `secret`, not both")


class Type(_Action, tag="type"):
    """`text`, or the value of the secret `secret` (the trace keeps its name and length)."""

    Result = r.Typed

    text: str = ""
    delay_ms: Annotated[int, Meta(ge=0, le=MAX_TYPE_DELAY_MS)] = 0
    secret: SecretName | None = None

    def __post_init__(self) -> None:
        _one_of_text_or_secret(self.text, self.secret)


class Press(_Action, tag="press"):
    """`chord` is pressed together (e.g. ["ctrl", "l"] or "ctrl+l"); `then` are keys pressed
    one after the other afterwards (a list, or a string split on spaces); `held` modifiers
    stay down for the whole press. The engine records them as normalized lists
    (holm/wire/keys.py)."""

    Result = r.Pressed

    chord: str | list[str] = msgspec.field(default_factory=list)
    then: str | list[str] = msgspec.field(default_factory=list)
    held: list[Modifier] = msgspec.field(default_factory=list)


class KeyDown(_Action, tag="key_down"):
    Result = r.KeyHeld

    # A key name, a chord ("ctrl+shift") or a list of keys; recorded as one normalized name.
    key: str | list[str]
    hold_ms: HoldMs | None = None


class KeyUp(_Action, tag="key_up"):
    Result = r.KeyReleased

    key: str | list[str]


# Waits


class Wait(_Action, tag="wait"):
    Result = r.Waited

    ms: WaitMs


class WaitStill(_Action, tag="wait_still"):
    Result = r.Stillness

    settle_ms: CappedMs = 400
    within_ms: CappedMs = 10_000


class WindowQuery(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    class_: str | None = msgspec.field(default=None, name="class")
    title: str | None = None
    within_ms: WaitMs = 10_000


class AwaitWindow(_Action, tag="await_window"):
    Result = r.FoundWindow

    what: WindowQuery


# Screen and windows


class CaptureWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    window: str | None = None
    region: Region | None = None
    scale: Scale = 100
    pointer: bool = False
    tab: str | None = None


class Capture(_Action, tag="capture"):
    Result = r.Captured

    what: CaptureWhat = msgspec.field(default_factory=CaptureWhat)


class Cursor(_Action, tag="cursor"):
    Result = Point


class Windows(_Action, tag="windows"):
    Result = r.WindowList

    active: bool = False


class Arrange(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    how: Literal["at", "size", "maximise", "minimise", "restore"]
    to: Point | None = None
    width: int | None = None
    height: int | None = None


class WindowOp(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    do: Literal["focus", "close", "arrange"]
    how: Arrange | None = None


class OnWindow(_Action, tag="on_window"):
    Result = r.WindowChanged

    window: str
    what: WindowOp


class Launch(_Action, tag="launch"):
    Result = r.FoundWindow

    app: str
    args: list[str] = msgspec.field(default_factory=list)


class Apps(_Action, tag="apps"):
    Result = r.AppList


class RecordWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    do: Literal["start", "stop", "status"]
    fps: Fps = DEFAULT_RECORD_FPS


class Record(_Action, tag="record"):
    """A video of the screen, written in the box (needs the `video` feature)."""

    Result = r.Recording

    what: RecordWhat


class Clipboard(_Action, tag="clipboard"):
    Result = r.ClipboardView

    selection: Selection = "clipboard"
    text: str | None = None


# Pages


class OpenUrl(_Action, tag="open_url"):
    Result = r.PageOpened

    url: str
    target: Literal["blank", "current"] = "current"
    label: str | None = None


class Tabs(_Action, tag="tabs"):
    Result = r.TabList


class OnTab(_Action, tag="on_tab"):
    Result = r.TabDone

    tab: str
    close: bool = False


# An element is found by meaning: its label, placeholder, accessible name, visible text,
# aria-label, title or alt, a role and a name ("button Continue"), or a CSS or XPath selector
# when the query looks like one (docs/pages.md says the rule).
Query = Annotated[str, Meta(min_length=1, max_length=2000)]
PageMs = Annotated[int, Meta(ge=0, le=MAX_WAIT_MS)]
PageLimit = Annotated[int, Meta(ge=1, le=1_000_000)]
Controls = Annotated[int, Meta(ge=1, le=MAX_LIST_LIMIT)]


class _ElementOp(
    msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, tag_field="op", kw_only=True
):
    pass


class ClickOp(_ElementOp, tag="click"):
    """Clicked as a person would (docs/pages.md): once the element is shown, enabled, at
    rest and not covered, with trusted input; `force`: by script (`click()`), whatever the
    element looks like."""

    query: Query
    exact: bool = False
    button: Button = "left"
    double: bool = False
    new_tab: bool = False
    motion: Motion = "instant"
    seed: int | None = None
    force: bool = False


class DragOp(_ElementOp, tag="drag"):
    from_: Query = msgspec.field(name="from")
    to: Query
    exact: bool = False
    button: Button = "left"
    motion: Motion = "instant"
    seed: int | None = None


class FillOp(_ElementOp, tag="fill"):
    """`text`, or the value of the secret `secret` (the trace keeps its name and length)."""

    query: Query
    text: str = ""
    exact: bool = False
    secret: SecretName | None = None

    def __post_init__(self) -> None:
        _one_of_text_or_secret(self.text, self.secret)


class FocusOp(_ElementOp, tag="focus"):
    query: Query
    exact: bool = False


class CheckOp(_ElementOp, tag="check"):
    query: Query
    on: bool = True
    exact: bool = False


class OptionsOp(_ElementOp, tag="options"):
    query: Query
    exact: bool = False


class ChooseOp(_ElementOp, tag="choose"):
    query: Query
    options: Annotated[list[str], Meta(min_length=1)]
    drop: bool = False
    exact: bool = False


class UploadOp(_ElementOp, tag="upload"):
    query: Query
    paths: Annotated[list[str], Meta(min_length=1)]
    exact: bool = False


class HoverOp(_ElementOp, tag="hover"):
    query: Query
    exact: bool = False
    motion: Motion = "instant"
    seed: int | None = None


class HighlightOp(_ElementOp, tag="highlight"):
    query: Query
    ms: PageMs = 1000
    exact: bool = False


class WaitForOp(_ElementOp, tag="wait_for"):
    """Wait until `query` (or one of `or`) is there and visible (`gone`: until none is);
    `enabled` also wants it enabled, `load` the page loaded, `until` a JavaScript
    expression true, `quiet_ms` the page unchanged that long."""

    query: Query | None = None
    or_: list[Query] = msgspec.field(default_factory=list, name="or")
    gone: bool = False
    within_ms: PageMs = 10_000
    exact: bool = False
    quiet_ms: PageMs = 0
    enabled: bool = False
    load: bool = False
    until: str | None = None


class HistoryOp(_ElementOp, tag="history"):
    go: Literal["back", "forward", "reload"]


class ScrollOp(_ElementOp, tag="scroll"):
    query: Query | None = None
    to: Literal["by", "top", "bottom"] | None = None
    dx: int = 0
    dy: int = 0
    exact: bool = False


ElementOp = (
    ClickOp
    | DragOp
    | FillOp
    | FocusOp
    | CheckOp
    | OptionsOp
    | ChooseOp
    | UploadOp
    | HoverOp
    | HighlightOp
    | WaitForOp
    | HistoryOp
    | ScrollOp
)


def op_of(what: ElementOp | NodeOp) -> str:
    return str(type(what).__struct_config__.tag)


class OnPage(_Action, tag="on_page"):
    """An element operation on the tab `tab` (ID or label; the front one when None).
    `settle_ms` waits that long after it before the page is read again."""

    Result = r.ElementDone

    what: ElementOp
    tab: str | None = None
    settle_ms: PageMs = 0


class LookWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    query: Query
    limit: Controls = 10
    scroll: bool = False
    exact: bool = False
    role: str | None = None
    tab: str | None = None


class Look(_Action, tag="look"):
    Result = r.Found

    what: LookWhat


class SnapshotWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """`scope` is a query (or selector) whose element bounds the snapshot; `delta` lists only
    the controls changed since this tab's last snapshot; `quiet_ms` first waits until the
    page stayed unchanged that long."""

    scope: Query | None = None
    limit: Controls = 200
    tab: str | None = None
    delta: bool = False
    quiet_ms: PageMs = 0


class Snapshot(_Action, tag="snapshot"):
    Result = r.PageSnapshot

    what: SnapshotWhat = msgspec.field(default_factory=SnapshotWhat)


class ReadWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    format: Literal["markdown", "text", "raw"] = "markdown"
    limit: PageLimit = 20_000
    max_links: Annotated[int, Meta(ge=0, le=MAX_LIST_LIMIT)] = 100
    tab: str | None = None


class Read(_Action, tag="read"):
    Result = r.PageText

    what: ReadWhat = msgspec.field(default_factory=ReadWhat)


class EvaluateWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    expression: str
    timeout_ms: CappedMs = 5000
    limit: PageLimit = 2000


class Evaluate(_Action, tag="evaluate"):
    Result = r.Evaluated

    what: EvaluateWhat
    tab: str | None = None


class PageShotWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    full: bool = False
    format: Literal["png", "jpeg"] = "png"
    quality: Annotated[int, Meta(ge=1, le=100)] = 70
    tab: str | None = None
    annotate: bool = False


class PageShot(_Action, tag="page_shot"):
    Result = r.PageShotTaken

    what: PageShotWhat = msgspec.field(default_factory=PageShotWhat)


class PdfWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Print the page to a PDF file at `path` in the box."""

    path: Annotated[str, Meta(min_length=1)] = "/tmp/page.pdf"
    landscape: bool = False
    no_background: bool = False
    tab: str | None = None


class PagePdf(_Action, tag="page_pdf"):
    Result = r.FileSaved

    what: PdfWhat = msgspec.field(default_factory=PdfWhat)


class ConsoleWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """The page's console messages, oldest first (the last `limit`); `errors`: errors and
    uncaught exceptions only; `clear`: forget them after reading."""

    errors: bool = False
    clear: bool = False
    limit: ListLimit = 200
    tab: str | None = None


class Console(_Action, tag="console"):
    Result = r.ConsoleLog

    what: ConsoleWhat = msgspec.field(default_factory=ConsoleWhat)


class StateSaveWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Save the browser's cookies and the storage of `origins` (default: the origins of the
    open tabs) as Playwright's storage state (`indexed_db`: their IndexedDB too). `name`
    keeps it in the server's store."""

    origins: list[str] = msgspec.field(default_factory=list)
    name: str | None = None
    session_storage: bool = False
    indexed_db: bool = False
    no_local_storage: bool = False


class StateSave(_Action, tag="state_save"):
    """Runs only through `…/state/save`, never as a batch step (it reads secrets)."""

    Result = r.BrowserState

    what: StateSaveWhat = msgspec.field(default_factory=StateSaveWhat)


class StateLoadWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    name: str | None = None
    session_json: str | None = None


class StateLoad(_Action, tag="state_load"):
    """Runs only through `…/state/load`, never as a batch step (it carries secrets)."""

    Result = r.StateLoaded

    what: StateLoadWhat


class CookieIn(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    name: NonEmpty
    value: str
    domain: str | None = None
    path: str | None = None
    http_only: bool = False
    secure: bool = False
    same_site: Literal["Strict", "Lax", "None"] | None = None
    # Seconds since the epoch; none for a session cookie.
    expires: float | None = None


class CookiesWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """List (`get`), set or clear the browser's cookies: those of `url`, or all of them."""

    do: Literal["get", "set", "clear"]
    url: str | None = None
    cookies: list[CookieIn] = msgspec.field(default_factory=list)


class Cookies(_Action, tag="cookies"):
    """Cookies are secrets: this action runs only through `…/cookies`, never as a batch
    step (a step is recorded as it was sent, values and all)."""

    Result = r.CookieList

    what: CookiesWhat


class Dialog(_Action, tag="dialog"):
    Result = r.DialogDone

    accept: bool = True
    text: str | None = None


# Native widgets


MAX_NODE_DEPTH = 64
MAX_NODES = 2000


class NodeQuery(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A widget: by `path` (as a node's `path` answered it), or the best of those whose
    label holds `query` and whose role is `role`; `app` keeps to one application."""

    query: str | None = None
    role: str | None = None
    app: str | None = None
    path: str | None = None


class _NodeOp(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, tag_field="op"):
    pass


class NodeTreeOp(_NodeOp, tag="tree"):
    """The widgets of `app` (every application when None), `depth` levels down."""

    app: str | None = None
    depth: Annotated[int, Meta(ge=1, le=MAX_NODE_DEPTH)] = 32


class NodeFindOp(_NodeOp, tag="find"):
    node: NodeQuery
    limit: Annotated[int, Meta(ge=1, le=MAX_NODES)] = 10


class NodeFocusOp(_NodeOp, tag="focus"):
    node: NodeQuery


class NodeInvokeOp(_NodeOp, tag="invoke"):
    """Do the widget's action named `action` (its first one when None)."""

    node: NodeQuery
    action: str | None = None


class NodeSetOp(_NodeOp, tag="set"):
    """Set a widget's text (an editable one) or its number (a slider, a spin button)."""

    node: NodeQuery
    value: str


NodeOp = NodeTreeOp | NodeFindOp | NodeFocusOp | NodeInvokeOp | NodeSetOp
# The widget operations that only read.
NODE_READS = (NodeTreeOp, NodeFindOp)


class OnNode(_Action, tag="on_node"):
    """A widget operation through the box's accessibility bus (AT-SPI)."""

    Result = r.NodeDone

    what: NodeOp


# Files and commands


class ExecWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """`argv` items and `env` values may be secrets by name (`{"secret": "NAME"}`): the
    trace keeps the names. `env` is added to the box's own environment (beyond the spec)."""

    argv: Annotated[list[str | SecretRef], Meta(min_length=1)]
    timeout_ms: Annotated[int, Meta(ge=1, le=MAX_EXEC_MS)] = 10_000
    env: dict[str, str | SecretRef] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.env:
            if not _VARIABLE.fullmatch(name):
                raise ValueError(f"bad variable name {name!r} in env")


def names_in(actions: Iterable[Action]) -> set[str]:
    """The names of every secret the actions give instead of a value."""
    names: set[str] = set()
    for action in actions:
        match action:
            case Type(secret=str() as name):
                names.add(name)
            case OnPage(what=FillOp(secret=str() as name)):
                names.add(name)
            case Exec(what=what):
                items = [*what.argv, *what.env.values()]
                names |= {item.secret for item in items if isinstance(item, SecretRef)}
    return names


def plain_argv(argv: list[str | SecretRef]) -> list[str]:
    """An argv as the box runs it: the server puts every secret's value in before an action
    reaches a box, so a name left here is refused, never passed on as text."""
    return [_plain(item) for item in argv]


def plain_env(env: dict[str, str | SecretRef]) -> dict[str, str]:
    return {name: _plain(value) for name, value in env.items()}


def _plain(item: str | SecretRef) -> str:
    if isinstance(item, SecretRef):
        raise BadRequest(f"the secret {item.secret!r} was not given its value")
    return item


class Exec(_Action, tag="exec"):
    Result = r.ExecResult

    what: ExecWhat


class ReadFile(_Action, tag="read_file"):
    Result = r.FileData

    path: str


class WriteWhat(msgspec.Struct, forbid_unknown_fields=True):
    path: str
    contents_base64: str


class WriteFile(_Action, tag="write_file"):
    Result = r.FileSaved

    what: WriteWhat


class ListFiles(_Action, tag="list_files"):
    Result = r.FileList

    path: str


class GrepWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    pattern: str
    path: str = "/"
    include: str | None = None
    ignore_case: bool = False
    limit: ListLimit = 200


class Grep(_Action, tag="grep"):
    Result = r.GrepResult

    what: GrepWhat


class GlobWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    pattern: str
    path: str = "/"
    limit: ListLimit = 200


class Glob(_Action, tag="glob"):
    Result = r.GlobResult

    what: GlobWhat


Action = (
    Move
    | Click
    | DoubleClick
    | Drag
    | Path
    | MouseDown
    | MouseUp
    | Scroll
    | Type
    | Press
    | KeyDown
    | KeyUp
    | Wait
    | WaitStill
    | AwaitWindow
    | Capture
    | Cursor
    | Windows
    | OnWindow
    | Launch
    | Apps
    | Record
    | Clipboard
    | OpenUrl
    | Tabs
    | OnTab
    | OnPage
    | Look
    | Snapshot
    | Read
    | Evaluate
    | PageShot
    | PagePdf
    | Console
    | Cookies
    | StateSave
    | StateLoad
    | Dialog
    | OnNode
    | Exec
    | ReadFile
    | WriteFile
    | ListFiles
    | Grep
    | Glob
)


# Actions that only read: they neither need the screen's input (a person holding the screen
# does not stop them) nor change what it shows.
_READS = (
    Cursor,
    Windows,
    AwaitWindow,
    Capture,
    Apps,
    Tabs,
    Look,
    Snapshot,
    Read,
    PageShot,
    Console,
    ReadFile,
    ListFiles,
    Grep,
    Glob,
)
# Actions that use no screen: they run beside a batch, whichever screen it holds.
_BOX_WIDE = (Exec, ReadFile, WriteFile, ListFiles, Grep, Glob, Apps, Wait)


# Actions that carry or read secrets (cookie values, a browser state): they run only through
# their own routes, which record nothing; a batch holding one is refused whole, since a
# batch step is kept in the trace as it was sent.
NOT_IN_BATCH = (Cookies, StateSave, StateLoad)


def feature_needed(action: Action) -> Feature | None:
    """The feature of `spec.desktop.features` a box needs to do `action`, if any."""
    if isinstance(action, Record):
        return "video"
    return None


def reads_only(action: Action) -> bool:
    if isinstance(action, Clipboard):
        return action.text is None
    if isinstance(action, Record):
        return action.what.do == "status"
    if isinstance(action, OnNode):
        return isinstance(action.what, NODE_READS)
    return isinstance(action, _READS)


def uses_screen(action: Action) -> bool:
    return not isinstance(action, _BOX_WIDE)


def type_of(action: Action) -> str:
    """An action's `type`, as written in a batch."""
    return str(type(action).__struct_config__.tag)
