"""One screen of a Wayland box, as the event loop sees it: the X11 screen's interface
(holm/agent/x11/screen.py) over the screen's sway.

Input is the virtual devices' (input.py) on the screen's input thread or the agent's loop,
as on X11 (the same `on_input`); frames are the capture watcher's last picture
(capture.py), hashed once per picture on the capture thread, so a still screen is answered
unchanged without reading a pixel; windows are sway's tree, read on the query thread.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from holm.agent.frames.band_cache import WholePng
from holm.agent.frames.capture import Raw
from holm.agent.frames.change_count import ChangeCount
from holm.agent.frames.tiles import FrameHasher
from holm.agent.wayland import windows
from holm.agent.wayland.maximised_proxy import MaximisedProxy
from holm.agent.wayland.sway_ipc import SwayIpc, WindowEvents
from holm.agent.wayland.sway_up import Sway
from holm.agent.x11.screen import WINDOW_POLL_S
from holm.agent.x11.screen import Screen as X11Screen
from holm.agent.x11.windows import no_window
from holm.errors import Failed, ScreenUnavailable
from holm.wire.actions import Arrange
from holm.wire.results import WindowInfo
from holm.wire.values import Encoding, Point, Region, Selection

if TYPE_CHECKING:
    # pywayland's modules, imported when a screen connects: an X11 box's image (the docker
    # runtime's) has no pywayland, and its agent imports this module all the same.
    from holm.agent.wayland.capture import Capture, Picture

T = TypeVar("T")
CLIPBOARD_S = 5.0
FIRST_PICTURE_S = 10.0


class Screen(X11Screen):
    def __init__(
        self,
        index: int,
        width: int,
        height: int,
        png_pool: ThreadPoolExecutor,
        hasher: FrameHasher,
    ) -> None:
        super().__init__(index, width, height, png_pool, hasher)
        self.sway: Sway | None = None
        # Chromium's way to the sway (maximised_proxy.py), when the screen has a Chromium.
        self.chromium_proxy: MaximisedProxy | None = None
        self._capture: Capture | None = None
        self._ipc: SwayIpc | None = None
        # sway's window events, counted: what the tab listing is kept by (pages.py).
        self._events: WindowEvents | None = None
        self._changes = ChangeCount()
        # The last picture hashed: its serial and its hash.
        self._hashed: tuple[int, str] | None = None

    async def connect(self, display_name: str) -> None:
        """Open the screen's connections to its sway (`self.sway`, up)."""
        sway = self.sway
        if sway is None:
            raise ScreenUnavailable(f"screen {self.index} has no compositor")
        self.display_name = display_name
        loop = asyncio.get_running_loop()

        def changed() -> None:
            # From the capture thread: the count is the loop's.
            if not loop.is_closed():
                loop.call_soon_threadsafe(self._changes.bump)

        from holm.agent.wayland.capture import Capture
        from holm.agent.wayland.input import Input

        self._capture = Capture(sway.socket, self.width, self.height, changed)
        self._capture.start()
        self._ipc = await asyncio.to_thread(SwayIpc, sway.ipc)
        self._events = await asyncio.to_thread(WindowEvents, sway.ipc)
        self._input = await self.input_lane.run(lambda: Input(sway.socket, self.width, self.height))
        await asyncio.to_thread(self._capture.first.wait, FIRST_PICTURE_S)
        if not self._capture.has_picture:
            raise Failed(f"screen {self.index}: no picture from sway ({self._capture.failure})")

    def _capturing(self) -> Capture:
        grabbed = self._up(self._capture)
        if grabbed.failure is not None:
            raise ScreenUnavailable(f"screen {self.index}'s capture failed: {grabbed.failure}")
        if not grabbed.has_picture:
            raise ScreenUnavailable(f"screen {self.index} has no picture yet")
        return grabbed

    def last_pixels(self) -> bytes:
        """The screen's last picture, raw BGRX (what a recording is fed: any thread)."""
        return self._capturing().read().data

    def _kept_hash(self) -> str | None:
        """The last picture's hash, when it was made already (no pixel read)."""
        hashed = self._hashed
        grabbed = self._capturing()
        return hashed[1] if hashed is not None and hashed[0] == grabbed.serial else None

    def _read_and_hash(self) -> tuple[Picture, str]:
        """The last picture and its hash (on the capture thread)."""
        picture = self._capturing().read()
        hashed = self._hashed
        if hashed is not None and hashed[0] == picture.serial:
            return picture, hashed[1]
        digest = self.hasher.picture(picture.data, self.width, self.height)
        self._hashed = (picture.serial, digest)
        return picture, digest

    async def frame_hash(self) -> tuple[str, int, int]:
        kept = self._kept_hash()
        if kept is not None:
            return kept, self.width, self.height
        _, digest = await self.capture_lane.run(self._read_and_hash)
        return digest, self.width, self.height

    # The frame's own steps (X11Screen.frame does the rest)

    async def _window_region(self, window: str) -> Region:
        found = await self.on_query(lambda ipc: windows.get_window(ipc, window))
        return Region(found.x, found.y, found.width, found.height)

    def _changes_counted(self) -> int | None:
        return self._changes.value

    async def _read_frame(
        self,
        whole_screen: bool,
        area: Region,
        have: str | None,
        scale: int,
        at: tuple[int, int] | None,
        encoding: Encoding,
    ) -> tuple[str, Raw | WholePng | bytes | None]:
        """The frame's hash and, unless it is `have`, its pixels or the picture last
        encoded of them: the capture watcher's last picture, hashed once."""
        if whole_screen and scale == 100 and at is None:
            kept = self._kept_hash()
            if kept is not None and kept == have:
                # A still screen: answered from the kept hash, without reading a pixel.
                return kept, None
            picture, digest = await self.capture_lane.run(self._read_and_hash)
            raw = Raw(picture.data, self.width, self.height)
        else:
            picture = await self.capture_lane.run(self._capturing().read)
            raw = Raw(_crop(picture.data, self.width, area), area.width, area.height)
            digest = await self.capture_lane.run(
                lambda: self.hasher.picture(raw.data, raw.width, raw.height, scale, at)
            )
        if digest == have:
            return digest, None
        return digest, self._encoded_as(digest, encoding) or raw

    async def await_change(self, after: int, within_ms: int) -> int:
        self._up(self._capture)
        return await self._changes.wait_past(after, within_ms)

    # Pointer and windows

    async def on_query(self, work: Callable[[SwayIpc], T]) -> T:
        ipc = self._up(self._ipc)
        self._settle_input()
        return await asyncio.get_running_loop().run_in_executor(
            self._query_thread, lambda: work(ipc)
        )

    async def cursor(self) -> Point:
        x, y = self._up(self._input).position()
        return Point(x, y)

    async def windows(self) -> list[WindowInfo]:
        # Read afresh every time (a get_tree, about a millisecond): sway tells a window's
        # change by an event a moment after it, so a kept listing could miss the change an
        # action made just before (the X11 screen waits for its watch to settle instead).
        return await self.on_query(windows.listing)

    def known_windows(self) -> list[WindowInfo] | None:
        return None

    def window_changes(self) -> int:
        return 0 if self._events is None else self._events.changes

    async def active_window(self) -> WindowInfo | None:
        found = await self.windows()
        return next((w for w in found if w.active), None)

    async def window_ids(self) -> set[int]:
        return {int(w.id, 16) for w in await self.windows()}

    async def wait_window(
        self,
        class_: str | None,
        title: str | None,
        within_ms: int,
        ignore: set[int] | None = None,
        still_trying: Callable[[], None] | None = None,
    ) -> WindowInfo:
        ignored = ignore or set()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within_ms / 1000
        while True:
            for found, names in await self.on_query(windows.named_listing):
                if int(found.id, 16) not in ignored and windows.matches(
                    found, names, class_, title
                ):
                    return found
            if loop.time() >= deadline:
                raise no_window(class_, title, within_ms)
            if still_trying is not None:
                still_trying()
            await asyncio.sleep(WINDOW_POLL_S)

    async def focus_window(self, window: str) -> None:
        await self.on_query(lambda ipc: windows.focus(ipc, window))

    async def arrange_window(self, window: str, how: Arrange) -> WindowInfo:
        return await self.on_query(lambda ipc: windows.arrange(ipc, window, how))

    async def close_window(self, window: str) -> None:
        await self.on_query(lambda ipc: windows.close(ipc, window))

    # Clipboard: wl-clipboard's programs, which speak wlr-data-control to sway.

    def _clipboard_env(self) -> dict[str, str]:
        sway = self.sway
        if sway is None or self._ipc is None:
            raise ScreenUnavailable(f"screen {self.index} is not up")
        return {"PATH": "/usr/bin:/bin", **sway.env()}

    async def clipboard_get(self, selection: Selection) -> str:
        argv = ["wl-paste", "--no-newline", *(["--primary"] if selection == "primary" else [])]
        done = await asyncio.to_thread(
            subprocess.run,
            argv,
            env=self._clipboard_env(),
            capture_output=True,
            timeout=CLIPBOARD_S,
        )
        if done.returncode != 0:
            # wl-paste says "Nothing is copied" (and ends with 1) for an empty selection.
            return ""
        return done.stdout.decode(errors="replace")

    async def clipboard_set(self, selection: Selection, text: str) -> None:
        argv = ["wl-copy", *(["--primary"] if selection == "primary" else [])]
        # The text on stdin (never in a command line). wl-copy forks a child that serves
        # the selection until another takes it: it must not hold a pipe of ours open.
        done = await asyncio.to_thread(
            subprocess.run,
            argv,
            env=self._clipboard_env(),
            input=text.encode(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=CLIPBOARD_S,
        )
        if done.returncode != 0:
            raise Failed(f"wl-copy ended with {done.returncode}")

    def close(self) -> None:
        if self._settling is not None:
            self._settling.cancel()
        if self._capture is not None:
            self._capture.close()
        if self._input is not None and self.input_lane.idle:
            # Only with nothing on the input thread (a busy one keeps its connection, which
            # goes with the process). Imported only now: see the imports.
            from holm.agent.wayland.input import Input

            if isinstance(self._input, Input):
                self._input.close()
        if self._ipc is not None:
            self._ipc.close()
        if self._events is not None:
            self._events.close()
        if self.chromium_proxy is not None:
            self.chromium_proxy.close()
        self.input_lane.shutdown()
        self.capture_lane.shutdown()
        self._query_thread.shutdown(wait=False, cancel_futures=True)
        if self.sway is not None:
            # sway's runtime folder (its sockets, config): in a box's own /tmp it goes with
            # the box; an agent run on a host leaves none behind (where it may remove it).
            shutil.rmtree(self.sway.folder, ignore_errors=True)


def _crop(data: bytes, width: int, area: Region) -> bytes:
    view = memoryview(data)
    row = width * 4
    return b"".join(
        view[(area.y + r) * row + area.x * 4 : (area.y + r) * row + (area.x + area.width) * 4]
        for r in range(area.height)
    )
