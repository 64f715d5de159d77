"""A test double: a `Runtime` whose boxes are a few dictionaries in this process.

It exists for the tests of the engine and the HTTP layer (and the schemathesis run, where a
real box per generated request would take far too long); holmd never serves it. It is honest
about what it models: a box's screen is a picture that every input step changes (its PNG is
small whatever the screen's size: a test of the server never looks at its pixels), files
and the clipboard are kept, `exec` knows `echo`, `true`, `false` and `sleep`, and a paused
box refuses nothing but does not change its picture. `max_sleep_secs` caps the time that
waits and `sleep` really take, for runs that send many generated requests. Boxes outlive a
`MemoryRuntime` object when the same `MemoryWorld` is given to a new one, so a restarted
server can adopt them.
"""

from __future__ import annotations

import asyncio
import base64
import fnmatch
import hashlib
import io
import re
import time
from typing import Any, Literal

import msgspec
from PIL import Image

from holm.adapters.agent.catalog import CATALOG
from holm.adapters.base import (
    Capabilities,
    ExecResult,
    FileInfo,
    FrameResult,
    GrepMatch,
    Held,
    Released,
    RuntimeBox,
    Started,
    WindowInfo,
)
from holm.errors import BadRequest, Failed, NotFound, Timeout, Transport, Unsupported
from holm.wire.actions import (
    Action,
    Apps,
    Arrange,
    AwaitWindow,
    Capture,
    Click,
    Clipboard,
    Cursor,
    DoubleClick,
    Drag,
    Exec,
    KeyDown,
    KeyUp,
    Launch,
    ListFiles,
    MouseDown,
    MouseUp,
    Move,
    OnWindow,
    Path,
    Press,
    ReadFile,
    Region,
    Scroll,
    Selection,
    Type,
    Wait,
    WaitStill,
    Windows,
    WriteFile,
)
from holm.wire.actions import Point as PointT
from holm.wire.spec import Placement, Spec, canonical_spec


class _Screen:
    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self.cursor = PointT(x=0, y=0)
        self.changes = 0
        self.windows: list[WindowInfo] = [
            WindowInfo(id="0x100001", title="about:blank", class_="chromium", active=True)
        ]
        self.clipboard: dict[str, str] = {"clipboard": "", "primary": ""}
        self.buttons: set[str] = set()
        self.keys: set[str] = set()

    def picture(self) -> str:
        return f"px:{self.width}x{self.height}:{self.changes}"


class MemoryBox:
    def __init__(self, box_id: str, spec: Spec, placement: Placement, server_id: str) -> None:
        desktop = canonical_spec(spec).desktop
        self.box_id = box_id
        self.spec = spec
        self.placement = placement
        self.server_id = server_id
        self.created_at_ms = int(time.time() * 1000)
        self.state: Literal["running", "paused", "stopped"] = "running"
        self.screens = [
            _Screen(desktop.width or 0, desktop.height or 0) for _ in range(desktop.screens)
        ]
        self.files: dict[str, bytes] = {}
        self.desktop = MemoryDesktop(self)
        self.max_sleep_secs: float | None = None

    async def sleep(self, seconds: float) -> None:
        cap = self.max_sleep_secs
        await asyncio.sleep(seconds if cap is None else min(seconds, cap))


class MemoryWorld:
    """What outlives a runtime object: the boxes, as a real runtime's processes would."""

    def __init__(self) -> None:
        self.boxes: dict[str, MemoryBox] = {}


class MemoryRuntime:
    """A runtime of in-memory boxes (see the module docstring). `create_delay` lets a test
    see a box while it is `starting`; `fail_create` makes every create fail."""

    def __init__(
        self,
        name: str = "memory",
        *,
        server_id: str = "test",
        world: MemoryWorld | None = None,
        create_delay: float = 0.0,
        max_sleep_secs: float | None = None,
    ) -> None:
        self.name = name
        self.max_sleep_secs = max_sleep_secs
        self.server_id = server_id
        self.world = world or MemoryWorld()
        self.create_delay = create_delay
        self.fail_create: str | None = None

    def can(self) -> Capabilities:
        return Capabilities(persistent=True)

    def _box(self, box_id: str) -> MemoryBox:
        box = self.world.boxes.get(box_id)
        if box is None:
            raise NotFound(f"the {self.name} runtime has no box {box_id}")
        return box

    async def create(self, box_id: str, spec: Spec, placement: Placement) -> Started:
        if spec.desktop.packages:
            raise Unsupported(f"the {self.name} runtime cannot install packages")
        if self.create_delay:
            await asyncio.sleep(self.create_delay)
        if self.fail_create is not None:
            raise Failed(self.fail_create)
        box = self.world.boxes[box_id] = MemoryBox(box_id, spec, placement, self.server_id)
        box.max_sleep_secs = self.max_sleep_secs
        return self._started(box_id)

    def _started(self, box_id: str) -> Started:
        box = self._box(box_id)
        return Started(viewer_urls=[f"memory:{box_id}/{i}" for i in range(len(box.screens))])

    async def pause(self, box_id: str) -> None:
        self._box(box_id).state = "paused"

    async def resume(self, box_id: str) -> None:
        self._box(box_id).state = "running"

    async def stop(self, box_id: str) -> None:
        box = self._box(box_id)
        box.state = "stopped"
        if not box.placement.persistent:
            box.files.clear()

    async def start(self, box_id: str) -> Started:
        box = self._box(box_id)
        box.state = "running"
        fresh = MemoryBox(box_id, box.spec, box.placement, box.server_id)
        box.screens, box.desktop = fresh.screens, MemoryDesktop(box)
        return self._started(box_id)

    async def delete(self, box_id: str) -> None:
        self.world.boxes.pop(box_id, None)

    async def list(self) -> list[RuntimeBox]:
        return [
            RuntimeBox(
                box_id=box.box_id,
                state=box.state,
                server_id=box.server_id,
                spec=box.spec,
                placement=box.placement,
                created_at_ms=box.created_at_ms,
            )
            for box in self.world.boxes.values()
        ]

    async def desktop(self, box_id: str) -> MemoryDesktop:
        box = self._box(box_id)
        if box.state == "stopped":
            raise Transport(f"box {box_id} is stopped")
        return box.desktop

    async def close(self) -> None:
        pass


class MemoryDesktop:
    """The `Desktop` of a `MemoryBox`."""

    def __init__(self, box: MemoryBox) -> None:
        self.box = box

    def _screen(self, screen: int) -> _Screen:
        if not 0 <= screen < len(self.box.screens):
            raise NotFound(f"no screen {screen}")
        return self.box.screens[screen]

    def _touch(self, screen: _Screen, at: PointT | None = None) -> None:
        if at is not None:
            screen.cursor = at
        if self.box.state == "running":
            screen.changes += 1

    async def act(self, screen: int, action: Action) -> dict[str, Any]:
        s = self._screen(screen)
        match action:
            case Move(to=to):
                self._touch(s, to)
            case Click(at=at) | DoubleClick(at=at) | MouseUp(at=at) | Scroll(at=at):
                self._touch(s, at)
                if isinstance(action, MouseUp):
                    s.buttons.discard(action.button)
            case MouseDown(at=at, button=button):
                self._touch(s, at)
                s.buttons.add(button)
            case Drag(to=to) | Path(through=[*_, to]):
                self._touch(s, to)
            case Type() | Press():
                self._touch(s)
            case KeyDown(key=key):
                s.keys.add(key)
            case KeyUp(key=key):
                s.keys.discard(key)
            case Wait(ms=ms):
                await self.box.sleep(ms / 1000)
            case WaitStill():
                pass
            case Cursor():
                return {"x": s.cursor.x, "y": s.cursor.y}
            case Windows(active=active):
                found = [w for w in s.windows if w.active or not active]
                return {"windows": msgspec.to_builtins(found)}
            case AwaitWindow(what=what):
                window = await self.wait_window(screen, what.class_, what.title, what.within_ms)
                return {"window": msgspec.to_builtins(window)}
            case OnWindow(window=window, what=what):
                if what.do == "close":
                    await self.close_window(screen, window)
                elif what.do == "focus":
                    await self.focus_window(screen, window)
                elif what.how is not None:
                    await self.arrange_window(screen, window, what.how)
            case Launch(app=app, args=args):
                return {"window": msgspec.to_builtins(await self.launch(screen, app, args))}
            case Apps():
                return {"apps": sorted(CATALOG)}
            case Clipboard(selection=selection, text=None):
                return {"text": await self.clipboard_get(screen, selection)}
            case Clipboard(selection=selection, text=str(text)):
                await self.clipboard_set(screen, selection, text)
            case Capture():
                frame = await self.frame(screen)
                png = base64.b64encode(frame.png or b"").decode()
                return {"hash": frame.hash, "png_base64": png}
            case Exec(what=what):
                return msgspec.to_builtins(await self.exec(what.argv, what.timeout_ms))  # type: ignore[no-any-return]
            case ReadFile(path=path):
                data = await self.read_file(path)
                return {"path": path, "contents_base64": base64.b64encode(data).decode()}
            case WriteFile(what=what):
                await self.write_file(what.path, base64.b64decode(what.contents_base64))
            case ListFiles(path=path):
                return {"entries": msgspec.to_builtins(await self.list_files(path))}
            case _:
                raise Unsupported(f"the memory runtime cannot do {type(action).__name__}")
        return {}

    async def end_batch(self, screen: int) -> tuple[Released, Held]:
        s = self._screen(screen)
        released = Released(buttons=sorted(s.buttons), keys=sorted(s.keys))
        s.buttons.clear()
        s.keys.clear()
        return released, Held()

    async def frame(
        self,
        screen: int,
        *,
        have: str | None = None,
        window: str | None = None,
        region: Region | None = None,
        scale: int = 100,
    ) -> FrameResult:
        s = self._screen(screen)
        width, height = (region.width, region.height) if region else (s.width, s.height)
        width, height = max(1, width * scale // 100), max(1, height * scale // 100)
        digest = s.picture() + f":{window}:{region}:{scale}"
        frame_hash = "px:" + hashlib.blake2b(digest.encode(), digest_size=16).hexdigest()
        if frame_hash == have:
            return FrameResult(hash=frame_hash, unchanged=True, width=width, height=height)
        png = await asyncio.to_thread(_png, width, height, s.changes)
        return FrameResult(hash=frame_hash, png=png, width=width, height=height)

    async def frame_hash(self, screen: int) -> tuple[str, int, int]:
        frame = await self.frame(screen, have="")
        return frame.hash, frame.width, frame.height

    async def cursor(self, screen: int) -> PointT:
        return self._screen(screen).cursor

    async def windows(self, screen: int) -> list[WindowInfo]:
        return list(self._screen(screen).windows)

    async def active_window(self, screen: int) -> WindowInfo | None:
        return next((w for w in self._screen(screen).windows if w.active), None)

    async def wait_window(
        self, screen: int, class_: str | None, title: str | None, within_ms: int
    ) -> WindowInfo:
        for window in self._screen(screen).windows:
            if class_ in (None, window.class_) and title in (None, window.title):
                return window
        raise Timeout(f"no window of class {class_!r} within {within_ms} ms")

    def _window(self, screen: int, window: str) -> WindowInfo:
        for found in self._screen(screen).windows:
            if found.id == window:
                return found
        raise NotFound(f"no window {window} on screen {screen}")

    async def focus_window(self, screen: int, window: str) -> None:
        target = self._window(screen, window)
        for found in self._screen(screen).windows:
            found.active = found is target
        self._touch(self._screen(screen))

    async def arrange_window(self, screen: int, window: str, how: Arrange) -> WindowInfo:
        target = self._window(screen, window)
        if how.how == "at" and how.to is not None:
            target.x, target.y = how.to.x, how.to.y
        elif how.how == "size" and how.width and how.height:
            target.width, target.height = how.width, how.height
        else:
            target.minimised = how.how == "minimise"
        self._touch(self._screen(screen))
        return target

    async def close_window(self, screen: int, window: str) -> None:
        s = self._screen(screen)
        s.windows.remove(self._window(screen, window))
        self._touch(s)

    async def launch(self, screen: int, app: str, args: list[str]) -> WindowInfo:
        if app not in CATALOG and app not in self.box.spec.apps:
            raise BadRequest(f"no application {app!r} in the catalog")
        s = self._screen(screen)
        window = WindowInfo(id=hex(0x200001 + len(s.windows)), title=app, class_=app)
        s.windows.append(window)
        self._touch(s)
        return window

    async def clipboard_get(self, screen: int, selection: Selection) -> str:
        return self._screen(screen).clipboard[selection]

    async def clipboard_set(self, screen: int, selection: Selection, text: str) -> None:
        self._screen(screen).clipboard[selection] = text

    async def exec(self, argv: list[str], timeout_ms: int) -> ExecResult:
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

    async def read_file(self, path: str) -> bytes:
        if path not in self.box.files:
            raise NotFound(f"no file {path}")
        return self.box.files[path]

    async def write_file(self, path: str, data: bytes) -> None:
        self.box.files[path] = data

    async def list_files(self, path: str) -> list[FileInfo]:
        prefix = path.rstrip("/") + "/"
        return [
            FileInfo(name=name[len(prefix) :], path=name, type="file", size=len(data), mtime_ms=0)
            for name, data in sorted(self.box.files.items())
            if name.startswith(prefix) and "/" not in name[len(prefix) :]
        ]

    async def grep(
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

    async def glob(self, pattern: str, path: str, limit: int) -> tuple[list[str], bool]:
        found = [
            name
            for name in sorted(self.box.files)
            if name.startswith(path) and fnmatch.fnmatch(name.rsplit("/", 1)[-1], pattern)
        ]
        return found[:limit], len(found) > limit

    async def close(self) -> None:
        pass


def _png(width: int, height: int, changes: int) -> bytes:
    shade = changes * 37 % 256
    out = io.BytesIO()
    size = (min(width, 64), min(height, 64))
    Image.new("RGB", size, (shade, 255 - shade, 128)).save(out, "PNG", compress_level=1)
    return out.getvalue()


def _is_number(text: str) -> bool:
    try:
        return float(text) >= 0
    except ValueError:
        return False
