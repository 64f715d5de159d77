"""The `Desktop` of a memory box: one `match` over every action, as the agent's is
(holm/agent/acts.py): the box-wide ones here, those on a screen next, its pages in
pages.py and its widgets in widgets.py."""

from __future__ import annotations

import asyncio
import base64
import fnmatch
import hashlib
import re
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from msgspec.structs import replace
from PIL import Image

from holm.agent.acts_in_flight import ActsInFlight
from holm.agent.frames.encoding import image_bytes
from holm.errors import BadRequest, Failed, NotFound, ScreenUnavailable, Timeout, Unsupported
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.actions import (
    DEFAULT_HOLD_MS,
    Action,
    Apps,
    AwaitWindow,
    Capture,
    Click,
    Clipboard,
    Console,
    Cookies,
    Cursor,
    Dialog,
    DoubleClick,
    Drag,
    Evaluate,
    Exec,
    Glob,
    Grep,
    KeyDown,
    KeyUp,
    Launch,
    ListFiles,
    Look,
    MouseDown,
    MouseUp,
    Move,
    OnNode,
    OnPage,
    OnTab,
    OnWindow,
    OpenUrl,
    PagePdf,
    PageShot,
    Path,
    Press,
    Read,
    ReadFile,
    Record,
    RecordWhat,
    Scroll,
    Snapshot,
    StateLoad,
    StateSave,
    Tabs,
    Type,
    Wait,
    WaitStill,
    WindowOp,
    Windows,
    WriteFile,
)
from holm.wire.catalog import CATALOG
from holm.wire.keys import normalized_chord, normalized_key_name, normalized_then
from holm.wire.results import ActionResult, ExecResult, FileInfo, GrepMatch, WindowInfo
from holm.wire.runtime import BatchEnd, BrowserStarts, FrameResult, Held, Released
from holm.wire.spec import canonical_spec
from holm.wire.values import PNG, Encoding, Region
from holm.wire.values import Point as PointT

from . import pages, widgets
from .screen import MemoryScreen

if TYPE_CHECKING:
    from .runtime import MemoryBox


class MemoryDesktop:
    """The `Desktop` of a `MemoryBox`."""

    def __init__(self, box: MemoryBox) -> None:
        self.box = box
        # The acts being done, by screen: a batch's end asked meanwhile waits for them, as
        # the agent's does (holm/adapters/base.py, `end_batch`).
        self._acting = ActsInFlight()

    def _screen(self, screen: int) -> MemoryScreen:
        if not 0 <= screen < len(self.box.screens):
            # The agent's words for the same fault (holm/agent/agent.py).
            have = len(self.box.screens)
            raise ScreenUnavailable(f"no screen {screen}: this box has {have}", retryable=False)
        return self.box.screens[screen]

    def _touch(self, screen: MemoryScreen, at: PointT | None = None) -> None:
        if at is not None:
            screen.cursor = at
        if self.box.state == "running":
            screen.changes.bump()

    async def act(self, screen: int, action: Action) -> ActionResult:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._acting.add(screen, done)
        try:
            return await self._act(screen, action)
        finally:
            done.set_result(None)

    async def _act(self, screen: int, action: Action) -> ActionResult:
        match action:
            case Exec(what=what):
                return await self._exec(a.plain_argv(what.argv), what.timeout_ms)
            case ReadFile(path=path):
                if path not in self.box.files:
                    raise NotFound(f"no file {path}")
                data = self.box.files[path]
                encoded = base64.b64encode(data).decode()
                return r.FileData(path=path, size=len(data), contents_base64=encoded)
            case WriteFile(what=what):
                try:
                    data = base64.b64decode(what.contents_base64, validate=True)
                except ValueError:
                    raise BadRequest("contents_base64 is not valid base64") from None
                self.box.files[what.path] = data
                return r.FileSaved(path=what.path, size=len(data))
            case ListFiles(path=path):
                return r.FileList(path=path, entries=self._list(path))
            case Grep(what=g):
                matches, cut = self._grep(g.pattern, g.path, g.include, g.ignore_case, g.limit)
                return r.GrepResult(matches=matches, cut=cut)
            case Glob(what=g):
                paths, cut = self._glob(g.pattern, g.path, g.limit)
                return r.GlobResult(paths=paths, cut=cut)
            case Apps():
                return r.AppList(apps=[r.AppInfo(name=name) for name in sorted(CATALOG)])
            case Wait(ms=ms):
                await self.box.sleep(ms / 1000)
                return r.Waited(waited_ms=ms)
        return await self._on_screen(self._screen(screen), action)

    async def _on_screen(self, s: MemoryScreen, action: Action) -> ActionResult:
        match action:
            case Move(to=to):
                self._touch(s, to)
                return r.Pointed(at=s.cursor)
            case Scroll(dx=0, dy=0, dx_px=0, dy_px=0):
                raise BadRequest("scroll needs dx, dy, dx_px or dy_px")
            case Click(at=at) | DoubleClick(at=at) | Scroll(at=at):
                self._touch(s, at)
                return r.Pointed(at=s.cursor)
            case MouseUp(at=at, button=button):
                self._touch(s, at)
                s.buttons.discard(button)
                return r.Pointed(at=s.cursor)
            case MouseDown(at=at, button=button, hold_ms=hold_ms):
                self._touch(s, at)
                s.buttons.add(button)
                release_at = int(time.time() * 1000) + (hold_ms or DEFAULT_HOLD_MS)
                return r.ButtonHeld(at=s.cursor, release_at_ms=release_at)
            case Drag(to=to) | Path(through=[*_, to]):
                self._touch(s, to)
                return r.Pointed(at=s.cursor)
            case Type(text=text):
                self._touch(s)
                return r.Typed(typed=len(text))
            case Press(chord=chord_in, then=then_in):
                chord, then = normalized_chord(chord_in), normalized_then(then_in)
                if not chord and not then:
                    raise BadRequest("press needs keys in `chord` or `then`")
                self._touch(s)
                return r.Pressed(pressed=[*chord, *then])
            case KeyDown(key=key_in, hold_ms=hold_ms):
                key = normalized_key_name(key_in)
                s.keys.add(key)
                release_at = int(time.time() * 1000) + (hold_ms or DEFAULT_HOLD_MS)
                return r.KeyHeld(key=key, release_at_ms=release_at)
            case KeyUp(key=key_in):
                up = normalized_key_name(key_in)
                s.keys.discard(up)
                return r.KeyReleased(key=up)
            case WaitStill():
                return r.Stillness(still=True, waited_ms=0, hash=s.picture())
            case Cursor():
                return s.cursor
            case Windows(active=active):
                # Copies, as the agent's answers are: a later change must not reach them.
                found = [replace(w) for w in s.windows if w.active or not active]
                return r.WindowList(windows=found)
            case AwaitWindow(what=what):
                for window in s.windows:
                    if what.class_ in (None, window.class_) and what.title in (None, window.title):
                        return r.FoundWindow(window=window)
                raise Timeout(f"no window of class {what.class_!r} within {what.within_ms} ms")
            case OnWindow(window=window, what=what):
                return self._on_window(s, window, what)
            case Launch(app=app):
                if app not in CATALOG and app not in self.box.spec.apps:
                    raise BadRequest(f"no application {app!r} in the catalog")
                launched = WindowInfo(id=hex(0x200001 + len(s.windows)), title=app, class_=app)
                s.windows.append(launched)
                self._touch(s)
                return r.FoundWindow(window=launched)
            case Clipboard(selection=selection, text=None):
                text = s.clipboard[selection]
                return r.ClipboardView(selection=selection, length=len(text.encode()), text=text)
            case Clipboard(selection=selection, text=str(text)):
                s.clipboard[selection] = text
                return r.ClipboardView(selection=selection, length=len(text.encode()))
            case Capture(what=what):
                if what.tab is not None:
                    pages.tab_of(s, what.tab)
                frame = await self._frame(s, what.window, what.region, what.scale)
                png = base64.b64encode(frame.png or b"").decode()
                return r.Captured(
                    hash=frame.hash,
                    unchanged=False,
                    width=frame.width,
                    height=frame.height,
                    png_base64=png,
                )
            case PageShot(what=what):
                page = pages.tab_of(s, what.tab)
                frame = await self._frame(s, None, None, 100)
                return r.PageShotTaken(
                    tab=page.tab,
                    format=what.format,
                    width=frame.width,
                    height=frame.height,
                    data_base64=base64.b64encode(frame.png or b"").decode(),
                )
            case (
                OpenUrl()
                | Tabs()
                | OnTab()
                | OnPage()
                | Look()
                | Snapshot()
                | Read()
                | Evaluate()
                | PagePdf()
                | Cookies()
                | StateSave()
                | StateLoad()
                | Console()
                | Dialog()
            ):
                return pages.act(self.box, s, action)
            case Record(what=what):
                return self._record(s, what)
            case OnNode(what=what):
                if "accessibility" not in (canonical_spec(self.box.spec).desktop.features or []):
                    raise Unsupported("native widgets need a box with the `accessibility` feature")
                return widgets.on_node(s, what)
        raise Unsupported(f"the memory runtime cannot do {type(action).__name__}")

    def _record(self, s: MemoryScreen, what: RecordWhat) -> r.Recording:
        """A recording's bookkeeping as the agent keeps it; its file is a placeholder, not a
        video (the double has no pixels to record)."""
        now = int(time.time() * 1000)
        match what.do:
            case "start":
                if s.recording.recording:
                    raise Failed(f"the screen is recording already, to {s.recording.path}")
                path = f"/recordings/{now}.mp4"
                self.box.files[path] = b"not a video: the memory runtime records no pixels"
                s.recording = r.Recording(
                    recording=True,
                    path=path,
                    fps=what.fps,
                    width=s.width,
                    height=s.height,
                    started_at_ms=now,
                )
            case "stop":
                if not s.recording.recording:
                    raise Failed("the screen is not recording")
                s.recording = replace(s.recording, recording=False, stopped_at_ms=now)
        return s.recording

    def _on_window(self, s: MemoryScreen, window: str, what: WindowOp) -> r.WindowChanged:
        target = next((w for w in s.windows if w.id == window), None)
        if target is None:
            raise NotFound(f"no window {window}")
        self._touch(s)
        match what.do:
            case "focus":
                for found in s.windows:
                    found.active = found is target
                return r.WindowChanged(id=window)
            case "close":
                s.windows.remove(target)
                return r.WindowChanged(id=window, closed=True)
        how = what.how
        if how is None:
            raise BadRequest("arrange needs `how`")
        if how.how == "at" and how.to is not None:
            target.x, target.y = how.to.x, how.to.y
        elif how.how == "size" and how.width and how.height:
            target.width, target.height = how.width, how.height
        else:
            target.minimised = how.how == "minimise"
        return r.WindowChanged(id=window, window=replace(target))

    async def end_batch(self, screen: int) -> BatchEnd:
        await self._acting.done(screen)
        s = self._screen(screen)
        released = Released(buttons=sorted(s.buttons), keys=sorted(s.keys))
        s.buttons.clear()
        s.keys.clear()
        # Copies, as the agent's answers are: a later change must not reach them.
        return BatchEnd(
            released=released,
            held=Held(),
            windows=[replace(w) for w in s.windows],
            tabs=[replace(t) for t in s.tabs],
        )

    async def frame(
        self,
        screen: int,
        *,
        have: str | None = None,
        window: str | None = None,
        region: Region | None = None,
        scale: int = 100,
        encoding: Encoding = PNG,
    ) -> FrameResult:
        return await self._frame(self._screen(screen), window, region, scale, have, encoding)

    async def _frame(
        self,
        s: MemoryScreen,
        window: str | None,
        region: Region | None,
        scale: int,
        have: str | None = None,
        encoding: Encoding = PNG,
    ) -> FrameResult:
        width, height = (region.width, region.height) if region else (s.width, s.height)
        width, height = max(1, width * scale // 100), max(1, height * scale // 100)
        # The picture is the count's: a whole screen tells it, as an agent's does.
        whole = window is None and region is None and scale == 100
        changes = s.changes.value if whole else None
        digest = s.picture() + f":{window}:{region}:{scale}"
        frame_hash = "px:" + hashlib.blake2b(digest.encode(), digest_size=16).hexdigest()
        if frame_hash == have:
            return FrameResult(
                hash=frame_hash, unchanged=True, width=width, height=height, changes=changes
            )
        image = await asyncio.to_thread(_picture, width, height, s.changes.value, encoding)
        return FrameResult(
            hash=frame_hash,
            image=image,
            format=encoding.format,
            width=width,
            height=height,
            changes=changes,
        )

    async def frame_hash(self, screen: int) -> tuple[str, int, int]:
        frame = await self.frame(screen, have="")
        return frame.hash, frame.width, frame.height

    async def await_change(self, screen: int, after: int, within_ms: int) -> int:
        return await self._screen(screen).changes.wait_past(after, within_ms)

    def look_before(
        self, screen: int, have: str | None, with_png: bool = False
    ) -> Awaitable[FrameResult] | None:
        # The double's picture changes at every action: a frame before each step would be
        # in every test's trace. Its steps are recorded as an older agent's are.
        return None

    async def kept_frame(self, screen: int, digest: str) -> FrameResult:
        raise NotFound(f"the memory desktop keeps no picture {digest}")

    async def await_browser(self, screen: int, after: int, within_ms: int) -> BrowserStarts:
        raise Unsupported("the memory desktop runs no Chromium")

    async def _exec(self, argv: list[str], timeout_ms: int) -> ExecResult:
        match argv:
            case ["echo", *words]:
                return ExecResult(code=0, stdout=" ".join(words) + "\n", stderr="")
            case ["true"]:
                return ExecResult(code=0, stdout="", stderr="")
            case ["false"]:
                return ExecResult(code=1, stdout="", stderr="")
            case ["sleep", seconds] if _is_number(seconds):
                wait_ms = float(seconds) * 1000
                await self.box.sleep(min(wait_ms, timeout_ms) / 1000)
                timed_out = wait_ms > timeout_ms
                return ExecResult(
                    code=None if timed_out else 0, stdout="", stderr="", timed_out=timed_out
                )
            case _:
                return ExecResult(code=127, stdout="", stderr=f"{argv[0]}: not found\n")

    def _list(self, path: str) -> list[FileInfo]:
        prefix = path.rstrip("/") + "/"
        return [
            FileInfo(name=name[len(prefix) :], path=name, type="file", size=len(data), mtime_ms=0)
            for name, data in sorted(self.box.files.items())
            if name.startswith(prefix) and "/" not in name[len(prefix) :]
        ]

    def _grep(
        self, pattern: str, path: str, include: str | None, ignore_case: bool, limit: int
    ) -> tuple[list[GrepMatch], bool]:
        try:
            regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise BadRequest(f"bad pattern: {exc}") from exc
        matches = [
            GrepMatch(path=name, line=number, text=line)
            for name, data in sorted(self.box.files.items())
            if name.startswith(path) and (include is None or fnmatch.fnmatch(name, include))
            for number, line in enumerate(data.decode(errors="replace").splitlines(), 1)
            if regex.search(line)
        ]
        return matches[:limit], len(matches) > limit

    def _glob(self, pattern: str, path: str, limit: int) -> tuple[list[str], bool]:
        found = [
            name
            for name in sorted(self.box.files)
            if name.startswith(path) and fnmatch.fnmatch(name.rsplit("/", 1)[-1], pattern)
        ]
        return found[:limit], len(found) > limit

    async def close(self) -> None:
        pass


def _picture(width: int, height: int, changes: int, encoding: Encoding) -> bytes:
    shade = changes * 37 % 256
    size = (min(width, 64), min(height, 64))
    return image_bytes(Image.new("RGB", size, (shade, 255 - shade, 128)), encoding)


def _is_number(text: str) -> bool:
    try:
        return float(text) >= 0
    except ValueError:
        return False
