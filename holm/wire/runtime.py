"""What a runtime and a box's desktop tell the engine: what a runtime can do, a box it
started or still has, a frame, and what a batch left held down."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from holm.wire.results import Tab, WindowInfo
from holm.wire.spec import Placement, Spec
from holm.wire.values import ImageFormat

# The byte streams a runtime opens into a box (`Runtime.open_stream`): its agent's
# protocol, a screen's VNC server (RFB), and a screen's Chromium DevTools (HTTP and
# WebSocket as Chromium serves them).
StreamKind = Literal["agent", "vnc", "devtools"]


@dataclass(frozen=True)
class RuntimeSetup:
    """What a remote runtime is made of (the vendor API): its name, provider, fields, and
    its secrets opened, held in memory only and shown by no repr."""

    name: str
    provider: str
    fields: dict[str, Any]
    secrets: dict[str, str] = field(repr=False)


class Capabilities(msgspec.Struct, kw_only=True):
    pause: bool = True
    stop: bool = True
    persistent: bool = False
    network_off: bool = True
    packages: bool = False
    memory_limit: bool = False
    cpu_limit: bool = False
    max_screens: int = 8
    pages: bool = False
    viewer: bool = True
    wayland: bool = False
    # What a Wayland box of this runtime cannot have, by name: features of the spec
    # (refused at create, naming them) and actions (refused when asked). docs/runtimes.md.
    wayland_without: list[str] = msgspec.field(default_factory=list)
    # A named browser profile (`placement.profile`) kept between boxes: container runtimes.
    profile: bool = False


RoomLimit = Literal["max_boxes", "memory", "displays", "file_descriptors", "pids"]


class Room(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How many more boxes a runtime's host can take now, by the runtime's own estimate
    (beyond the spec: `GET /v1/runtimes/{name}`'s `room`). `boxes` more, and then `limit`
    refuses the next with `503 unavailable`; `by` is the room each limit the runtime
    watches leaves, in boxes; `running` the boxes it runs now (spares and boxes starting
    included). `box_memory_bytes` is what it takes a box to need: the mean PSS of its boxes
    when it has measured some, else its assumption."""

    boxes: int
    limit: RoomLimit
    running: int
    by: dict[RoomLimit, int]
    box_memory_bytes: int


class BuiltImage(msgspec.Struct, kw_only=True):
    """An image a runtime built on the way to a box (the docker runtime's create)."""

    image: str
    spec_digest: str


class Started(msgspec.Struct, kw_only=True):
    """What a runtime tells of a box it brought up (create, start). `built` names the image
    it had to build first, which the engine records as `image_built` in the server trace."""

    viewer_urls: list[str] = msgspec.field(default_factory=list)
    devtools_url: str | None = None
    built: BuiltImage | None = None


class RuntimeBox(msgspec.Struct, kw_only=True):
    """A box a runtime has, as it lists them for adoption by a restarted server."""

    box_id: str
    state: Literal["running", "paused", "stopped"]
    # The server that created it (a label), so that one server does not adopt another's.
    server_id: str | None = None
    # What the runtime kept of the box, so a server whose store lost it can adopt it.
    spec: Spec | None = None
    placement: Placement | None = None
    created_at_ms: int | None = None
    # The workspace that launched it (None: the server token), so that an adopted box
    # stays its workspace's.
    owner: str | None = None
    # A box started for the warm pool and not taken yet: no one's box, never adopted.
    spare: bool = False
    # Where its desktop answers while it has one (running or paused), as `Started` said,
    # so that a server that adopts it without its trace serves its viewers and DevTools.
    viewer_urls: list[str] = msgspec.field(default_factory=list)
    devtools_url: str | None = None


class FrameResult(msgspec.Struct, kw_only=True):
    # A hash of the captured pixels (and their size): equal hashes, equal pictures.
    hash: str
    unchanged: bool = False
    # The picture in `format` (PNG unless the reader asked otherwise); none when unchanged.
    image: bytes | None = None
    format: ImageFormat = "png"
    width: int = 0
    height: int = 0
    # The screen's count of changes (`Desktop.await_change`) read before this whole-screen
    # capture at scale 100 began, so every change it counts is in the picture; None where
    # the desktop cannot tell (a region, a window, a scale, a pointer, no DAMAGE). What
    # lets the engine answer a later unchanged frame itself (engine/still_screens.py).
    changes: int | None = None

    @property
    def png(self) -> bytes | None:
        """The picture when it is a PNG: what a trace keeps and a fork compares."""
        return self.image if self.format == "png" else None


class Held(msgspec.Struct, kw_only=True):
    """Buttons and keys still down after a batch, and when they will be released."""

    buttons: list[str] = msgspec.field(default_factory=list)
    keys: list[str] = msgspec.field(default_factory=list)
    release_at_ms: int | None = None


class Released(msgspec.Struct, kw_only=True):
    buttons: list[str] = msgspec.field(default_factory=list)
    keys: list[str] = msgspec.field(default_factory=list)


class BatchEnd(msgspec.Struct, kw_only=True):
    """What the end of a batch tells, in one answer: what it released, what stays down,
    and the screen's windows and tabs after it (every batch's answer carries both)."""

    released: Released
    held: Held
    windows: list[WindowInfo] = msgspec.field(default_factory=list)
    tabs: list[Tab] = msgspec.field(default_factory=list)


class BrowserStarts(msgspec.Struct, kw_only=True):
    """How many times a screen's Chromium was started again since the box came up (it ends
    when its last window closes), why the last time, and why it could not be when it could
    not: what holmd records as `browser_restarted` (docs/trace.md)."""

    starts: int = 0
    why: str | None = None
    failure: str | None = None


__all__ = [
    "BatchEnd",
    "BrowserStarts",
    "Capabilities",
    "FrameResult",
    "Held",
    "Released",
    "RuntimeBox",
    "RuntimeSetup",
    "Started",
    "StreamKind",
]
