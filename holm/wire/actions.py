"""The actions of a batch (`POST …/screens/{screen}/actions`), one tagged Struct per `type`.

A trace's `acted` entry keeps the action exactly as decoded here, so a fork can do it again.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Button = Literal["left", "right", "middle"]
Modifier = Literal["shift", "ctrl", "alt", "super"]
Motion = Literal["instant", "smooth", "human"]
Selection = Literal["clipboard", "primary"]

MAX_HOLD_MS = 60_000
DEFAULT_HOLD_MS = 10_000
MAX_WAIT_MS = 30_000
MAX_EXEC_MS = 600_000


class Point(msgspec.Struct, forbid_unknown_fields=True):
    x: int
    y: int


class Region(msgspec.Struct, forbid_unknown_fields=True):
    x: int
    y: int
    width: int
    height: int


class _Action(
    msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, tag_field="type", kw_only=True
):
    pass


# Input


class Move(_Action, tag="move"):
    to: Point
    motion: Motion = "instant"
    seed: int | None = None
    pause_ms: int = 0


class Click(_Action, tag="click"):
    at: Point | None = None
    button: Button = "left"
    held: list[Modifier] = msgspec.field(default_factory=list)
    motion: Motion = "instant"
    seed: int | None = None


class DoubleClick(_Action, tag="double_click"):
    at: Point | None = None
    button: Button = "left"
    motion: Motion = "instant"
    seed: int | None = None


class Drag(_Action, tag="drag"):
    to: Point
    from_: Point | None = msgspec.field(default=None, name="from")
    button: Button = "left"
    held: list[Modifier] = msgspec.field(default_factory=list)
    motion: Motion = "instant"
    seed: int | None = None


class Path(_Action, tag="path"):
    through: list[Point]
    button: Button = "left"
    held: list[Modifier] = msgspec.field(default_factory=list)
    motion: Motion = "instant"
    seed: int | None = None


class MouseDown(_Action, tag="mouse_down"):
    at: Point | None = None
    button: Button = "left"
    motion: Motion = "instant"
    seed: int | None = None
    hold_ms: int | None = None


class MouseUp(_Action, tag="mouse_up"):
    at: Point | None = None
    button: Button = "left"


class Scroll(_Action, tag="scroll"):
    at: Point | None = None
    dx: int = 0
    dy: int = 0


class Type(_Action, tag="type"):
    text: str
    delay_ms: int = 0


class Press(_Action, tag="press"):
    """`chord` is pressed together (e.g. ["ctrl", "l"]); `then` are keys pressed one after
    the other afterwards; `held` modifiers stay down for the whole press."""

    chord: list[str] = msgspec.field(default_factory=list)
    then: list[str] = msgspec.field(default_factory=list)
    held: list[Modifier] = msgspec.field(default_factory=list)


class KeyDown(_Action, tag="key_down"):
    key: str
    hold_ms: int | None = None


class KeyUp(_Action, tag="key_up"):
    key: str


# Waits


class Wait(_Action, tag="wait"):
    ms: int


class WaitStill(_Action, tag="wait_still"):
    settle_ms: int = 400
    within_ms: int = 10_000


class WindowQuery(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    class_: str | None = msgspec.field(default=None, name="class")
    title: str | None = None
    within_ms: int = 10_000


class AwaitWindow(_Action, tag="await_window"):
    what: WindowQuery


# Screen and windows


class CaptureWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    window: str | None = None
    region: Region | None = None
    scale: int = 100
    pointer: bool = False
    tab: str | None = None


class Capture(_Action, tag="capture"):
    what: CaptureWhat = msgspec.field(default_factory=CaptureWhat)


class Cursor(_Action, tag="cursor"):
    pass


class Windows(_Action, tag="windows"):
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
    window: str
    what: WindowOp


class Launch(_Action, tag="launch"):
    app: str
    args: list[str] = msgspec.field(default_factory=list)


class Apps(_Action, tag="apps"):
    pass


class RecordWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    do: Literal["start", "stop", "status"]
    fps: int = 12


class Record(_Action, tag="record"):
    what: RecordWhat


class Clipboard(_Action, tag="clipboard"):
    selection: Selection = "clipboard"
    text: str | None = None


# Pages


class OpenUrl(_Action, tag="open_url"):
    url: str
    target: Literal["blank", "current"] = "current"
    label: str | None = None


class Tabs(_Action, tag="tabs"):
    pass


class OnTab(_Action, tag="on_tab"):
    tab: str
    close: bool = False


class OnPage(_Action, tag="on_page"):
    what: dict[str, Any]


class Look(_Action, tag="look"):
    what: dict[str, Any] = msgspec.field(default_factory=dict)


class Snapshot(_Action, tag="snapshot"):
    what: dict[str, Any] = msgspec.field(default_factory=dict)


class Read(_Action, tag="read"):
    what: dict[str, Any] = msgspec.field(default_factory=dict)


class EvaluateWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    expression: str
    timeout_ms: int = 5000
    limit: int = 2000


class Evaluate(_Action, tag="evaluate"):
    what: EvaluateWhat


class PageShot(_Action, tag="page_shot"):
    what: dict[str, Any] = msgspec.field(default_factory=dict)


class Dialog(_Action, tag="dialog"):
    accept: bool = True
    text: str | None = None


# Native widgets


class OnNode(_Action, tag="on_node"):
    what: dict[str, Any]


# Files and commands


class ExecWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    argv: list[str]
    timeout_ms: int = 10_000


class Exec(_Action, tag="exec"):
    what: ExecWhat


class ReadFile(_Action, tag="read_file"):
    path: str


class WriteWhat(msgspec.Struct, forbid_unknown_fields=True):
    path: str
    contents_base64: str


class WriteFile(_Action, tag="write_file"):
    what: WriteWhat


class ListFiles(_Action, tag="list_files"):
    path: str


class GrepWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    pattern: str
    path: str = "/"
    include: str | None = None
    ignore_case: bool = False
    limit: int = 200


class Grep(_Action, tag="grep"):
    what: GrepWhat


class GlobWhat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    pattern: str
    path: str = "/"
    limit: int = 200


class Glob(_Action, tag="glob"):
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
    | Dialog
    | OnNode
    | Exec
    | ReadFile
    | WriteFile
    | ListFiles
    | Grep
    | Glob
)

# Steps a fork does again only when the source did them through a batch (`acted`).
PAGE_ACTIONS = (OpenUrl, Tabs, OnTab, OnPage, Look, Snapshot, Read, Evaluate, PageShot, Dialog)
