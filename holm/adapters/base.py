"""The interface between the engine and the runtimes: a `Runtime` starts and ends boxes,
and a box's `Desktop` does everything inside it. The engine sees nothing else.

Every runtime runs the same in-box agent in each box and reaches it over a byte stream
(`Runtime.open_stream`: a Unix socket for a box on this host, a relay through an engine's
API for one elsewhere); `Desktop` is the client side of that agent. Errors are
`holm.errors` classes: a step that ran and did not succeed raises `Failed`, one the box
cannot do raises `Unsupported`, a lost agent raises `Transport`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from holm.streams import Stream
from holm.wire.actions import Action
from holm.wire.api import ImageInfo
from holm.wire.results import ActionResult
from holm.wire.runtime import (
    BatchEnd,
    BrowserStarts,
    Capabilities,
    FrameResult,
    Room,
    RuntimeBox,
    Started,
    StreamKind,
)
from holm.wire.spec import Placement, Spec
from holm.wire.values import PNG, Encoding, Region

# What a stream's reader holds before it stops reading (asyncio's default is 64 KiB): a
# relay reads the stream in chunks as large as this.
STREAM_LIMIT = 1 << 20


class Desktop(Protocol):
    """Everything done inside one box. Methods are safe to call concurrently: a frame
    capture on one screen never waits for an action on another.

    Every in-box operation is an action (`holm.wire.actions`): `act` does it and answers
    its `Result`. Frames are apart because the frame watcher asks for them whenever a
    screen changed and an unchanged one must cost no PNG.

    `act`, `end_batch` and `frame` may send their request as they are called, before
    they are awaited (the agent's client does): a caller that must order them calls them
    in that order, under whatever lock orders them."""

    def act(self, screen: int, action: Action) -> Awaitable[ActionResult]:
        """Do one action (a batch step or a single operation) and return its result.
        Actions that do not use a screen (exec, files, apps) ignore `screen`."""
        ...

    def end_batch(self, screen: int) -> Awaitable[BatchEnd]:
        """Release what a batch left down without a `hold_ms`; tell what stays down, and
        the screen's windows and tabs as they are now (what every batch answers with: one
        round trip for all three). It may be asked while the batch's last act on `screen`
        is still being done: it is done after every act on `screen` asked before it."""
        ...

    def frame(
        self,
        screen: int,
        *,
        have: str | None = None,
        window: str | None = None,
        region: Region | None = None,
        scale: int = 100,
        encoding: Encoding = PNG,
    ) -> Awaitable[FrameResult]:
        """A capture, as a PNG unless `encoding` says otherwise; when its hash equals `have`,
        `unchanged` and nothing is encoded."""
        ...

    async def frame_hash(self, screen: int) -> tuple[str, int, int]:
        """The hash of the whole screen now, with its width and height; no PNG."""
        ...

    def look_before(
        self, screen: int, have: str | None, with_png: bool = False
    ) -> Awaitable[FrameResult] | None:
        """The whole screen as the step asked next on it finds it, for the trace: its hash
        (`unchanged` when it is `have`; with `with_png`, the PNG of a changed screen, where
        the desktop can: else no picture, for `kept_frame`), the acts asked after this call on the
        screen being done only once its pixels are read. None when the desktop cannot
        (an agent older than this): the step is then recorded with no frame before it."""
        ...

    def kept_frame(self, screen: int, digest: str) -> Awaitable[FrameResult]:
        """The PNG of a picture `look_before` found changed (`NotFound` once it is gone)."""
        ...

    async def await_change(self, screen: int, after: int, within_ms: int) -> int:
        """The screen's count of changes as soon as it is past `after`, or as it is after
        `within_ms`. A count names no picture: the frame watcher waits on it, then compares
        hashes."""
        ...

    async def await_browser(self, screen: int, after: int, within_ms: int) -> BrowserStarts:
        """How many times the screen's Chromium was started again (it ends when its last
        window closes), as soon as that is past `after`, or as it is after `within_ms`;
        `Unsupported` on a screen with no Chromium."""
        ...

    async def close(self) -> None: ...


class Runtime(Protocol):
    name: str

    def can(self) -> Capabilities: ...

    async def create(
        self, box_id: str, spec: Spec, placement: Placement, *, owner: str | None = None
    ) -> Started:
        """Bring a new box up and return when its desktop is ready (screens up, Chromium's
        window mapped). Refuse what it cannot do with `Unsupported`. The box keeps `owner`
        (its workspace) with its spec and placement, and lists it."""
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

    async def open_stream(
        self, box_id: str, kind: StreamKind, screen: int = 0, *, limit: int = STREAM_LIMIT
    ) -> Stream:
        """A new byte stream to the box's agent, to a screen's VNC server (x11vnc, RFB), or
        to a screen's Chromium DevTools (HTTP and WebSocket, as Chromium serves them on
        its port): whatever way the runtime reaches its box, a stream the caller owns and
        closes. `limit` is the reader's buffer (`asyncio.StreamReader`). A runtime without
        such a stream raises `Unsupported`; one that cannot reach it, `Transport`."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class SpareBoxes(Protocol):
    """A runtime that can keep boxes started before anyone asks for them (the warm pool).
    A spare is listed with `spare` set until it is claimed, so that a restarted server
    removes it rather than adopt it as someone's box."""

    async def create_spare(self, box_id: str, spec: Spec, placement: Placement) -> Started:
        """Bring a spare up, as `create` brings a box up."""
        ...

    async def claim(
        self, box_id: str, placement: Placement, *, owner: str | None = None
    ) -> Started:
        """The spare becomes a box as `create` would have made it, with `placement` (its
        lifetime is the taker's) and `owner`; from then on it is listed as any box. `NotFound` when
        there is no such spare, `Transport` when its processes ended."""
        ...


@runtime_checkable
class HostRoom(Protocol):
    """A runtime that knows how many more boxes its host can take, and refuses one that
    does not fit before anything of it is made."""

    async def room(self, spec: Spec | None = None) -> Room:
        """The room for more boxes of `spec` now, by the runtime's own estimate."""
        ...

    async def reserve(self, box_id: str, spec: Spec) -> None:
        """Hold room for a box about to be recorded and made, or raise `Unavailable`
        (retryable) naming the limit it does not fit. `create` of that box ends the hold."""
        ...

    def release(self, box_id: str) -> None:
        """End the hold of a box that will not be made after all."""
        ...


# A build's progress, one line at a time.
Progress = Callable[[str], None]


@runtime_checkable
class ImageBuilder(Protocol):
    """A runtime that builds images (the server serves the images API from it)."""

    async def build_image(
        self, spec: Spec, progress: Progress | None = None, *, rebuild: bool = False
    ) -> ImageInfo: ...

    async def list_images(self) -> list[ImageInfo]: ...

    async def get_image(self, digest: str) -> ImageInfo: ...

    async def remove_image(self, digest: str) -> None: ...


@runtime_checkable
class AppInstaller(Protocol):
    """A runtime that can give a running box more applications (`POST …/apps`)."""

    async def install_apps(self, box_id: str, apps: Mapping[str, Sequence[str]]) -> None:
        """Make each app of `apps` (its name → the Debian packages that give it) there in
        the running box; refuse with `Unsupported` what this runtime cannot give it, and
        raise `Failed` when the installation itself fails."""
        ...


__all__ = [
    "STREAM_LIMIT",
    "AppInstaller",
    "Desktop",
    "HostRoom",
    "ImageBuilder",
    "Progress",
    "Runtime",
    "SpareBoxes",
    "Stream",
]
