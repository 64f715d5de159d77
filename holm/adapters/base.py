"""The interface between the engine and the runtimes: a `Runtime` starts and ends boxes,
and a box's `Desktop` does everything inside it. The engine sees nothing else.

Every runtime runs the same in-box agent in each box and reaches it over a Unix socket;
`Desktop` is the client side of that agent. Errors are `holm.errors` classes: a step that
ran and did not succeed raises `Failed`, one the box cannot do raises `Unsupported`, a lost
agent raises `Transport`.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import msgspec

from holm.wire.actions import Action, Arrange, Point, Region, Selection
from holm.wire.spec import Placement, Spec


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


class Started(msgspec.Struct, kw_only=True):
    """What a runtime tells of a box it brought up (create, start)."""

    viewer_urls: list[str] = msgspec.field(default_factory=list)
    devtools_url: str | None = None


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


class FrameResult(msgspec.Struct, kw_only=True):
    # A hash of the captured pixels (and their size): equal hashes, equal pictures.
    hash: str
    unchanged: bool = False
    png: bytes | None = None
    width: int = 0
    height: int = 0


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


class ExecResult(msgspec.Struct, kw_only=True):
    code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    # Output past the cap was dropped; the cap is said in docs/api.md.
    truncated: bool = False


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


class Held(msgspec.Struct, kw_only=True):
    """Buttons and keys still down after a batch, and when they will be released."""

    buttons: list[str] = msgspec.field(default_factory=list)
    keys: list[str] = msgspec.field(default_factory=list)
    release_at_ms: int | None = None


class Released(msgspec.Struct, kw_only=True):
    buttons: list[str] = msgspec.field(default_factory=list)
    keys: list[str] = msgspec.field(default_factory=list)


class Desktop(Protocol):
    """Everything done inside one box. Methods are safe to call concurrently: a frame
    capture on one screen never waits for an action on another."""

    async def act(self, screen: int, action: Action) -> dict[str, Any]:
        """Do one step of a batch and return its result (what a reading step read)."""
        ...

    async def end_batch(self, screen: int) -> tuple[Released, Held]:
        """Release what a batch left down without a `hold_ms`; tell what stays down."""
        ...

    async def frame(
        self,
        screen: int,
        *,
        have: str | None = None,
        window: str | None = None,
        region: Region | None = None,
        scale: int = 100,
    ) -> FrameResult:
        """A capture; when its hash equals `have`, `unchanged` and no PNG is encoded."""
        ...

    async def frame_hash(self, screen: int) -> tuple[str, int, int]:
        """The hash of the whole screen now, with its width and height; no PNG."""
        ...

    async def cursor(self, screen: int) -> Point: ...

    async def windows(self, screen: int) -> list[WindowInfo]: ...

    async def active_window(self, screen: int) -> WindowInfo | None: ...

    async def wait_window(
        self, screen: int, class_: str | None, title: str | None, within_ms: int
    ) -> WindowInfo: ...

    async def focus_window(self, screen: int, window: str) -> None: ...

    async def arrange_window(self, screen: int, window: str, how: Arrange) -> WindowInfo: ...

    async def close_window(self, screen: int, window: str) -> None: ...

    async def launch(self, screen: int, app: str, args: list[str]) -> WindowInfo: ...

    async def clipboard_get(self, screen: int, selection: Selection) -> str: ...

    async def clipboard_set(self, screen: int, selection: Selection, text: str) -> None: ...

    async def exec(self, argv: list[str], timeout_ms: int) -> ExecResult: ...

    async def read_file(self, path: str) -> bytes: ...

    async def write_file(self, path: str, data: bytes) -> None: ...

    async def list_files(self, path: str) -> list[FileInfo]: ...

    async def grep(
        self, pattern: str, path: str, include: str | None, ignore_case: bool, limit: int
    ) -> tuple[list[GrepMatch], bool]:
        """Matches, and whether the search stopped at `limit` (`cut`)."""
        ...

    async def glob(self, pattern: str, path: str, limit: int) -> tuple[list[str], bool]: ...

    async def close(self) -> None: ...


class Runtime(Protocol):
    name: str

    def can(self) -> Capabilities: ...

    async def create(self, box_id: str, spec: Spec, placement: Placement) -> Started:
        """Bring a new box up and return when its desktop is ready (screens up, Chromium's
        window mapped). Refuse what it cannot do with `Unsupported`."""
        ...

    async def pause(self, box_id: str) -> None: ...

    async def resume(self, box_id: str) -> None: ...

    async def stop(self, box_id: str) -> None: ...

    async def start(self, box_id: str) -> Started:
        """A stopped box comes back with a new desktop (files kept when persistent)."""
        ...

    async def delete(self, box_id: str) -> None: ...

    async def list(self) -> list[RuntimeBox]: ...

    async def desktop(self, box_id: str) -> Desktop:
        """The box's desktop; connected once and shared by every caller."""
        ...

    async def close(self) -> None: ...


__all__ = [
    "Capabilities",
    "Desktop",
    "ExecResult",
    "FileInfo",
    "FrameResult",
    "GrepMatch",
    "Held",
    "Released",
    "Runtime",
    "RuntimeBox",
    "Started",
    "WindowInfo",
]
