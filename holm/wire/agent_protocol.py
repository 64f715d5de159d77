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
from typing import Annotated, Any

import msgspec

from holm.errors import HolmError
from holm.wire.actions import Action
from holm.wire.spec import AppDefinition
from holm.wire.values import PNG, Encoding, Region

# Big enough for a 64 MiB file read or write, base64 in its action or result (4/3 of it),
# and its envelope.
MAX_FRAME_BYTES = 96 * 1024 * 1024
# How long one wait for a screen's change may be.
MAX_WAIT_MS = 600_000
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
    """Do one action; the answer is the action's `Result`. `screen` is ignored by the
    actions that use none (exec, files, apps)."""

    screen: int
    action: Action


class EndBatch(_Request, tag="end_batch"):
    """Release what the batch left down; the answer is a `BatchEnd`, with the screen's
    windows and tabs. It is done after every `Act` on the same screen that came before it
    on the connection (`AgentInfo.ordered_end`), so a client may send it right behind the
    batch's last step, without waiting for that step's answer."""

    screen: int


class Frame(_Request, tag="frame"):
    screen: int
    have: str | None = None
    window: str | None = None
    region: Region | None = None
    scale: int = 100
    encoding: Encoding = PNG


class FrameHash(_Request, tag="frame_hash"):
    screen: int


class LookBefore(_Request, tag="look_before"):
    """The whole screen as the next step finds it, for the trace (`AgentInfo.looks_before`):
    its hash (a `FrameResult` with no picture, `unchanged` when it is `have`). Every `Act`
    and `EndBatch` on the same screen sent after it on the connection is done only once
    its pixels are read (only the tiles drawn on since the last read), so the picture is
    the one the step found; its PNG is encoded beside them, and `KeptFrame` fetches it.
    With `with_png` (the last step of a batch, whose answer waits for that PNG stored),
    the answer of a changed screen carries the PNG instead, once encoded: no `KeptFrame`
    round trip after it. An older agent ignores the field and answers without."""

    screen: int
    have: str | None = None
    with_png: bool = False


class KeptFrame(_Request, tag="kept_frame"):
    """The PNG of a picture a `LookBefore` read (`FrameResult`); `not_found` once it is no
    longer kept (the agent keeps the last few of each screen)."""

    screen: int
    hash: str


class AwaitChange(_Request, tag="await_change"):
    """The screen's count of changes (DAMAGE reports) once it is past `after`, or as it
    is after `within_ms`."""

    screen: int
    after: int
    within_ms: Annotated[int, msgspec.Meta(ge=0, le=MAX_WAIT_MS)]


class AwaitBrowser(_Request, tag="await_browser"):
    """The screen's count of Chromium starts (`BrowserStarts`: it is started again each
    time it ends) once it is past `after`, or as it is after `within_ms`."""

    screen: int
    after: int
    within_ms: Annotated[int, msgspec.Meta(ge=0, le=MAX_WAIT_MS)]


class DefineApps(_Request, tag="define_apps"):
    """Add (or replace) the apps of a spec's `apps` in the catalog."""

    apps: dict[str, AppDefinition]


# Every in-box operation is an `Act` of one action; the other requests are the agent's
# own (bring-up, frames, the catalog), which no action restates.
Request = (
    Ping
    | Ready
    | Info
    | Act
    | EndBatch
    | Frame
    | FrameHash
    | LookBefore
    | KeptFrame
    | AwaitChange
    | AwaitBrowser
    | DefineApps
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
    # An `EndBatch` waits for the acts on its screen sent before it; False from an agent
    # older than that (a box an older holmd started), whose client waits for them instead.
    ordered_end: bool = False
    # `LookBefore` and `KeptFrame` are known; False from an older agent, whose steps are
    # recorded with no frame of their own before them.
    looks_before: bool = False


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
    "MAX_WAIT_MS",
    "Act",
    "AgentInfo",
    "AwaitBrowser",
    "AwaitChange",
    "DefineApps",
    "EndBatch",
    "Err",
    "Frame",
    "FrameHash",
    "Info",
    "KeptFrame",
    "LookBefore",
    "Ok",
    "Ping",
    "RawOk",
    "Ready",
    "Request",
    "ScreenInfo",
    "frame",
    "read_frame",
]
