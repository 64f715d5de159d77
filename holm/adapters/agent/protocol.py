"""The agent's protocol: framed msgpack messages on a byte stream.

A frame is a 4-byte big-endian length and that many bytes of msgpack. A client sends
`Request`s (a union of Structs tagged by `op`, one per operation), each with an `id` of its
choosing; the agent answers each with `Ok(id, value)` or `Err(id, code, message,
retryable)` in whatever order the work finishes, so many requests can be in flight on one
connection. `code` is a `holm.errors` code.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import msgspec

from holm.errors import HolmError
from holm.wire.actions import Action, Arrange, Region, Selection
from holm.wire.spec import AppDefinition

# Big enough for a 64 MiB file read or write and its envelope.
MAX_FRAME_BYTES = 80 * 1024 * 1024
_LENGTH = struct.Struct(">I")


class _Request(msgspec.Struct, tag_field="op", kw_only=True, forbid_unknown_fields=True):
    id: int


class Ping(_Request, tag="ping"):
    pass


class Ready(_Request, tag="ready"):
    """Answers when every screen is up and Chromium's window is mapped on each."""

    timeout_ms: int = 60_000


class Info(_Request, tag="info"):
    """What the agent brought up: displays, viewer sockets, DevTools ports."""


class Act(_Request, tag="act"):
    screen: int
    action: Action


class EndBatch(_Request, tag="end_batch"):
    screen: int


class Frame(_Request, tag="frame"):
    screen: int
    have: str | None = None
    window: str | None = None
    region: Region | None = None
    scale: int = 100


class FrameHash(_Request, tag="frame_hash"):
    screen: int


class GetCursor(_Request, tag="cursor"):
    screen: int


class ListWindows(_Request, tag="windows"):
    screen: int


class ActiveWindow(_Request, tag="active_window"):
    screen: int


class WaitWindow(_Request, tag="wait_window"):
    screen: int
    class_: str | None = msgspec.field(default=None, name="class")
    title: str | None = None
    within_ms: int = 10_000


class FocusWindow(_Request, tag="focus_window"):
    screen: int
    window: str


class ArrangeWindow(_Request, tag="arrange_window"):
    screen: int
    window: str
    how: Arrange


class CloseWindow(_Request, tag="close_window"):
    screen: int
    window: str


class LaunchApp(_Request, tag="launch"):
    screen: int
    app: str
    args: list[str] = msgspec.field(default_factory=list)


class DefineApps(_Request, tag="define_apps"):
    """Add (or replace) the apps of a spec's `apps` in the catalog."""

    apps: dict[str, AppDefinition]


class ClipboardGet(_Request, tag="clipboard_get"):
    screen: int
    selection: Selection = "clipboard"


class ClipboardSet(_Request, tag="clipboard_set"):
    screen: int
    text: str
    selection: Selection = "clipboard"


class RunCommand(_Request, tag="exec"):
    argv: list[str]
    timeout_ms: int = 10_000


class ReadFile(_Request, tag="read_file"):
    path: str


class WriteFile(_Request, tag="write_file"):
    path: str
    data: bytes


class ListFiles(_Request, tag="list_files"):
    path: str


class Grep(_Request, tag="grep"):
    pattern: str
    path: str = "/"
    include: str | None = None
    ignore_case: bool = False
    limit: int = 200


class Glob(_Request, tag="glob"):
    pattern: str
    path: str = "/"
    limit: int = 200


Request = (
    Ping
    | Ready
    | Info
    | Act
    | EndBatch
    | Frame
    | FrameHash
    | GetCursor
    | ListWindows
    | ActiveWindow
    | WaitWindow
    | FocusWindow
    | ArrangeWindow
    | CloseWindow
    | LaunchApp
    | DefineApps
    | ClipboardGet
    | ClipboardSet
    | RunCommand
    | ReadFile
    | WriteFile
    | ListFiles
    | Grep
    | Glob
)


class Ok(msgspec.Struct, tag="ok", tag_field="r"):
    id: int
    value: Any = None


class Err(msgspec.Struct, tag="err", tag_field="r"):
    id: int
    code: str
    message: str
    retryable: bool = False

    @staticmethod
    def of(request_id: int, error: HolmError) -> Err:
        return Err(request_id, error.code, error.message, error.retryable)


class RawOk(msgspec.Struct, tag="ok", tag_field="r"):
    """`Ok` as a client reads it: the value stays raw until the caller names its type."""

    id: int
    value: msgspec.Raw = msgspec.Raw(b"\xc0")


class RequestId(msgspec.Struct):
    """Enough of a request that failed to decode to answer it."""

    id: int = -1


class ScreenInfo(msgspec.Struct, kw_only=True):
    screen: int
    display: str
    width: int
    height: int
    vnc_socket: str | None = None
    devtools_port: int | None = None


class AgentInfo(msgspec.Struct, kw_only=True):
    pid: int
    ready: bool
    screens: list[ScreenInfo]
    failure: str | None = None


encoder = msgspec.msgpack.Encoder()
request_decoder = msgspec.msgpack.Decoder(Request)
response_decoder = msgspec.msgpack.Decoder(RawOk | Err)
request_id_decoder = msgspec.msgpack.Decoder(RequestId)


def frame(message: object) -> bytes:
    body = encoder.encode(message)
    return _LENGTH.pack(len(body)) + body


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    """The next frame's body; `asyncio.IncompleteReadError` at the end of the stream."""
    (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
    if length > MAX_FRAME_BYTES:
        raise ValueError(f"a frame of {length} bytes is over the limit of {MAX_FRAME_BYTES}")
    return await reader.readexactly(length)


__all__ = [
    "MAX_FRAME_BYTES",
    "Act",
    "ActiveWindow",
    "AgentInfo",
    "ArrangeWindow",
    "ClipboardGet",
    "ClipboardSet",
    "CloseWindow",
    "DefineApps",
    "EndBatch",
    "Err",
    "FocusWindow",
    "Frame",
    "FrameHash",
    "GetCursor",
    "Glob",
    "Grep",
    "Info",
    "LaunchApp",
    "ListFiles",
    "ListWindows",
    "Ok",
    "Ping",
    "RawOk",
    "ReadFile",
    "Ready",
    "Request",
    "RunCommand",
    "ScreenInfo",
    "WaitWindow",
    "WriteFile",
    "frame",
    "read_frame",
]
