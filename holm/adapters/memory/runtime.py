"""A test double: a `Runtime` whose boxes are a few dictionaries in this process.

It exists for the tests of the engine and the HTTP layer (and the schemathesis run, where a
real box per generated request would take far too long); holmd never serves it. It is honest
about what it models: a box's screen is a picture that every input step changes (its PNG is
small whatever the screen's size: a test of the server never looks at its pixels), files
and the clipboard are kept, `exec` knows `echo`, `true`, `false` and `sleep`, and the desktop
of a paused or stopped box is refused in the real runtimes' words. The contract suite
(tests/contract/) runs the same actions on it and on real boxes. `max_sleep_secs` caps the time that
waits and `sleep` really take, for runs that send many generated requests. Boxes outlive a
`MemoryRuntime` object when the same `MemoryWorld` is given to a new one, so a restarted
server can adopt them.
"""

from __future__ import annotations

import asyncio
import base64
import fnmatch
import hashlib
import json
import re
import time
from typing import Literal
from urllib.parse import unquote, urlsplit

from msgspec.structs import replace
from PIL import Image

from holm.adapters.memory import agent_server
from holm.agent.acts_in_flight import ActsInFlight
from holm.agent.frames.change_count import ChangeCount
from holm.agent.frames.encoding import image_bytes
from holm.agent.widgets.atspi import role_matches, text_rank
from holm.errors import (
    BadRequest,
    Failed,
    NotFound,
    ScreenUnavailable,
    Timeout,
    Unavailable,
    Unsupported,
)
from holm.streams import Stream, stream_pair
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
    NodeOp,
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
from holm.wire.runtime import (
    BatchEnd,
    BrowserStarts,
    Capabilities,
    FrameResult,
    Held,
    Released,
    RuntimeBox,
    Started,
    StreamKind,
)
from holm.wire.spec import Placement, Spec, canonical_spec
from holm.wire.values import PNG, Encoding, Region
from holm.wire.values import Point as PointT


class _Screen:
    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self.cursor = PointT(x=0, y=0)
        self.changes = ChangeCount()
        self.windows: list[WindowInfo] = [
            WindowInfo(id="0x100001", title="about:blank", class_="chromium", active=True)
        ]
        self.clipboard: dict[str, str] = {"clipboard": "", "primary": ""}
        self.tabs: list[r.Tab] = [r.Tab(tab="tab-1", url="about:blank")]
        # What was filled in, checked or chosen on each page: (tab, query) to its value.
        self.values: dict[tuple[str, str], str] = {}
        self.buttons: set[str] = set()
        self.keys: set[str] = set()
        self.recording = r.Recording(recording=False)

    def picture(self) -> str:
        return f"px:{self.width}x{self.height}:{self.changes.value}"


class MemoryBox:
    def __init__(self, box_id: str, spec: Spec, placement: Placement, server_id: str) -> None:
        desktop = canonical_spec(spec).desktop
        self.box_id = box_id
        self.spec = spec
        self.placement = placement
        self.server_id = server_id
        self.owner: str | None = None
        self.created_at_ms = int(time.time() * 1000)
        self.state: Literal["running", "paused", "stopped"] = "running"
        self.screens = [
            _Screen(desktop.width or 0, desktop.height or 0) for _ in range(desktop.screens)
        ]
        self.files: dict[str, bytes] = {}
        self.cookies: list[r.Cookie] = []
        self.desktop = MemoryDesktop(self)
        self.max_sleep_secs: float | None = None
        self.spare = False

    async def sleep(self, seconds: float) -> None:
        cap = self.max_sleep_secs
        await asyncio.sleep(seconds if cap is None else min(seconds, cap))


class MemoryWorld:
    """What outlives a runtime object: the boxes, as a real runtime's processes would."""

    def __init__(self) -> None:
        self.boxes: dict[str, MemoryBox] = {}


class MemoryRuntime:
    """A runtime of in-memory boxes (see the module docstring). `create_delay` lets a test
    see a box while it is `starting`; `fail_create` makes every create fail; `reachable`
    false makes every call fail as a runtime that cannot be reached does (`unavailable`,
    retryable), its boxes left as they were."""

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
        self.reachable = True
        # The agent streams served (`open_stream`).
        self._served: set[asyncio.Task[None]] = set()

    def _reach(self) -> None:
        if not self.reachable:
            raise Unavailable(f"the {self.name} runtime cannot be reached", retryable=True)

    def can(self) -> Capabilities:
        # No viewer: its screens are no pictures a VNC server could serve.
        return Capabilities(persistent=True, profile=True, viewer=False)

    def _box(self, box_id: str) -> MemoryBox:
        self._reach()
        box = self.world.boxes.get(box_id)
        if box is None:
            raise NotFound(f"the {self.name} runtime has no box {box_id}")
        return box

    async def create(
        self, box_id: str, spec: Spec, placement: Placement, *, owner: str | None = None
    ) -> Started:
        self._reach()
        if spec.desktop.packages:
            raise Unsupported(f"the {self.name} runtime cannot install packages")
        if self.create_delay:
            await asyncio.sleep(self.create_delay)
        if self.fail_create is not None:
            raise Failed(self.fail_create)
        box = self.world.boxes[box_id] = MemoryBox(box_id, spec, placement, self.server_id)
        box.owner = owner
        box.max_sleep_secs = self.max_sleep_secs
        return self._started(box_id)

    async def create_spare(self, box_id: str, spec: Spec, placement: Placement) -> Started:
        started = await self.create(box_id, spec, placement)
        self.world.boxes[box_id].spare = True
        return started

    async def claim(
        self, box_id: str, placement: Placement, *, owner: str | None = None
    ) -> Started:
        box = self._box(box_id)
        if not box.spare:
            raise NotFound(f"the {self.name} runtime has no spare box {box_id}")
        box.spare, box.placement, box.owner = False, placement, owner
        box.created_at_ms = int(time.time() * 1000)
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
        # A stopped box keeps its files, persistent or not.
        box.state = "stopped"

    async def start(self, box_id: str) -> Started:
        box = self._box(box_id)
        box.state = "running"
        fresh = MemoryBox(box_id, box.spec, box.placement, box.server_id)
        box.screens, box.desktop = fresh.screens, MemoryDesktop(box)
        return self._started(box_id)

    async def delete(self, box_id: str) -> None:
        self._reach()
        self.world.boxes.pop(box_id, None)

    async def list(self) -> list[RuntimeBox]:
        self._reach()
        return [self._listed(box) for box in self.world.boxes.values()]

    def _listed(self, box: MemoryBox) -> RuntimeBox:
        desktop = Started() if box.state == "stopped" else self._started(box.box_id)
        return RuntimeBox(
            box_id=box.box_id,
            state=box.state,
            server_id=box.server_id,
            spec=box.spec,
            placement=box.placement,
            created_at_ms=box.created_at_ms,
            owner=box.owner,
            spare=box.spare,
            viewer_urls=desktop.viewer_urls,
            devtools_url=desktop.devtools_url,
        )

    async def desktop(self, box_id: str) -> MemoryDesktop:
        box = self._box(box_id)
        # The words every runtime uses for these (the local and docker runtimes).
        if box.state == "stopped":
            raise ScreenUnavailable(f"box {box_id} is stopped; start it first")
        if box.state == "paused":
            raise ScreenUnavailable(f"box {box_id} is paused; resume it first")
        return box.desktop

    async def open_stream(
        self, box_id: str, kind: StreamKind, screen: int = 0, *, limit: int = 1 << 16
    ) -> Stream:
        """The agent's protocol, served from the box's desktop (agent_server.py); no VNC
        server and no DevTools: its screens are not real."""
        box = self._box(box_id)
        if kind != "agent":
            raise Unsupported(f"the {self.name} runtime has no {kind}: its screens are not real")
        desktop = await self.desktop(box_id)
        ours, theirs = await stream_pair(limit)
        served = await asyncio.open_unix_connection(sock=theirs, limit=1 << 27)
        task = asyncio.create_task(agent_server.serve(desktop, len(box.screens), served))
        self._served.add(task)
        task.add_done_callback(self._served.discard)
        return ours

    async def close(self) -> None:
        for task in list(self._served):
            task.cancel()


class MemoryDesktop:
    """The `Desktop` of a `MemoryBox`."""

    def __init__(self, box: MemoryBox) -> None:
        self.box = box
        # The acts being done, by screen: a batch's end asked meanwhile waits for them, as
        # the agent's does (holm/adapters/base.py, `end_batch`).
        self._acting = ActsInFlight()

    def _screen(self, screen: int) -> _Screen:
        if not 0 <= screen < len(self.box.screens):
            # The agent's words for the same fault (holm/agent/agent.py).
            have = len(self.box.screens)
            raise ScreenUnavailable(f"no screen {screen}: this box has {have}", retryable=False)
        return self.box.screens[screen]

    def _touch(self, screen: _Screen, at: PointT | None = None) -> None:
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

    async def _on_screen(self, s: _Screen, action: Action) -> ActionResult:
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
                    _tab(s, what.tab)
                frame = await self._frame(s, what.window, what.region, what.scale)
                png = base64.b64encode(frame.png or b"").decode()
                return r.Captured(
                    hash=frame.hash,
                    unchanged=False,
                    width=frame.width,
                    height=frame.height,
                    png_base64=png,
                )
            case OpenUrl(url=url, target=target, label=label):
                if target == "blank" or not s.tabs:
                    s.tabs.insert(0, r.Tab(tab=f"tab-{len(s.tabs) + 1}"))
                front = s.tabs[0]
                front.url, front.title = url, _page_title(url)
                if label is not None:
                    for t in s.tabs:
                        t.label = None if t.label == label else t.label
                    front.label = label
                self._touch(s)
                return r.PageOpened(
                    tab=front.tab, url=url, title=front.title, loaded=True, label=label
                )
            case Tabs():
                # Copies, as the agent's answers are: a later navigation must not reach them.
                return r.TabList(tabs=[replace(t) for t in s.tabs])
            case OnTab(tab=tab, close=close):
                chosen = _tab(s, tab)
                s.tabs.remove(chosen)
                if not close:
                    s.tabs.insert(0, chosen)
                self._touch(s)
                return r.TabDone(tab=chosen.tab, closed=close)
            case OnPage(what=what, tab=tab):
                self._touch(s)
                return _on_page(s, _tab(s, tab), what)
            case Look(what=what):
                page = _tab(s, what.tab)
                hits = [_element(s, page, what.query)] if _has(page, what.query, what.exact) else []
                return r.Found(elements=hits[: what.limit], total=len(hits))
            case Snapshot(what=what):
                page = _tab(s, what.tab)
                return r.PageSnapshot(
                    tab=page.tab, url=page.url, title=page.title, controls=_controls(s, page)
                )
            case Read(what=what):
                page = _tab(s, what.tab)
                text = _page_text(page.url)
                return r.PageText(
                    tab=page.tab,
                    url=page.url,
                    title=page.title,
                    format=what.format,
                    text=text[: what.limit],
                    cut=len(text) > what.limit,
                )
            case Evaluate(what=what, tab=tab):
                page = _tab(s, tab)
                if what.expression.strip() == "document.title":
                    return r.Evaluated(value=page.title, type="string")
                if what.expression.strip() == "location.href":
                    return r.Evaluated(value=page.url, type="string")
                raise Unsupported(
                    "the memory runtime evaluates only document.title and location.href"
                )
            case PageShot(what=what):
                page = _tab(s, what.tab)
                frame = await self._frame(s, None, None, 100)
                return r.PageCaptured(
                    tab=page.tab,
                    format=what.format,
                    width=frame.width,
                    height=frame.height,
                    data_base64=base64.b64encode(frame.png or b"").decode(),
                )
            case PagePdf(what=what):
                _tab(s, what.tab)
                data = b"%PDF-1.4\n% a page of the memory runtime\n%%EOF\n"
                self.box.files[what.path] = data
                return r.FileSaved(path=what.path, size=len(data))
            case Cookies(what=what):
                return _cookies(self.box, what)
            case StateSave(what=what):
                if what.name is not None:
                    raise BadRequest("a named state is kept by the server, not the box")
                jar = [
                    {"name": c.name, "value": c.value, "domain": c.domain, "path": c.path}
                    for c in self.box.cookies
                ]
                state = json.dumps({"cookies": jar, "origins": []})
                return r.BrowserState(cookies=len(jar), origins=0, session_json=state)
            case StateLoad(what=what):
                if what.session_json is None:
                    raise BadRequest("the box loads a state from session_json")
                try:
                    loaded = json.loads(what.session_json)["cookies"]
                    cookies = [r.Cookie(**c) for c in loaded]
                except (ValueError, KeyError, TypeError) as exc:
                    raise BadRequest(f"session_json is not a storage state: {exc}") from None
                self.box.cookies = cookies
                return r.StateLoaded(cookies=len(cookies), origins=0)
            case Console(what=what):
                # The model's pages run no script, so they log nothing.
                _tab(s, what.tab)
                return r.ConsoleLog(messages=[])
            case Dialog():
                raise NotFound("no dialog is open on the page")
            case Record(what=what):
                return self._record(s, what)
            case OnNode(what=what):
                if "accessibility" not in (canonical_spec(self.box.spec).desktop.features or []):
                    raise Unsupported("native widgets need a box with the `accessibility` feature")
                return _on_node(s, what)
        raise Unsupported(f"the memory runtime cannot do {type(action).__name__}")

    def _record(self, s: _Screen, what: RecordWhat) -> r.Recording:
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

    def _on_window(self, s: _Screen, window: str, what: WindowOp) -> r.WindowChanged:
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
        s: _Screen,
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


# A small model of a page: the HTML of a `data:` URL (other pages are empty), whose text and
# attribute values hold the elements a query finds.


def _page_html(url: str) -> str:
    if not url.startswith("data:") or "," not in url:
        return ""
    head, _, body = url.partition(",")
    if head.endswith(";base64"):
        return base64.b64decode(body).decode(errors="replace")
    return unquote(body)


def _page_title(url: str) -> str:
    found = re.search(r"<title>(.*?)</title>", _page_html(url), re.S | re.I)
    return found.group(1).strip() if found else ""


def _page_text(url: str) -> str:
    html = re.sub(r"<title>.*?</title>", " ", _page_html(url), flags=re.S | re.I)
    return " ".join(re.sub(r"<[^>]*>", " ", html).split())


def _has(page: r.Tab, query: str, exact: bool) -> bool:
    html = _page_html(page.url)
    values = re.findall(r'(?:placeholder|aria-label|title|alt|value)="([^"]*)"', html)
    texts = [*values, *re.split(r"\s*<[^>]*>\s*", html)]
    if exact:
        return query in [t.strip() for t in texts]
    return any(query.lower() in t.lower() for t in texts)


def _widgets(s: _Screen) -> list[r.Node]:
    """The model's widgets: each window is an application (named by its class) whose one
    widget is its frame."""
    return [
        r.Node(
            role="application",
            name=w.class_,
            path=w.class_,
            children=[
                r.Node(
                    role="frame",
                    name=w.title,
                    path=f"{w.class_}/0",
                    states=["showing", "visible"] + (["active"] if w.active else []),
                    bounds=Region(w.x, w.y, w.width, w.height),
                )
            ],
        )
        for w in s.windows
    ]


def _on_node(s: _Screen, what: NodeOp) -> r.NodeDone:
    op = a.op_of(what)
    apps = _widgets(s)
    if isinstance(what, a.NodeTreeOp):
        return r.NodeDone(op=op, nodes=[n for n in apps if what.app in (None, n.name)])
    q = what.node
    hits = [
        n
        for app in apps
        if q.app in (None, app.name)
        for n in (app, *app.children)
        if (q.path is None or n.path == q.path)
        and role_matches(q.role, n.role)
        and text_rank(q.query, n.name) is not None
    ]
    if isinstance(what, a.NodeFindOp):
        return r.NodeDone(op=op, nodes=hits[: what.limit], cut=len(hits) > what.limit)
    if not hits:
        raise NotFound("no widget matches the query")
    if isinstance(what, a.NodeFocusOp):
        return r.NodeDone(op=op, node=hits[0])
    kind = "has no action" if isinstance(what, a.NodeInvokeOp) else "takes no value"
    raise BadRequest(f"the {hits[0].role} at {hits[0].path} {kind}")


def _tab(s: _Screen, tab: str | None) -> r.Tab:
    if tab is None:
        if not s.tabs:
            s.tabs.append(r.Tab(tab="tab-1", url="about:blank"))
        return s.tabs[0]
    for t in s.tabs:
        if tab in (t.tab, t.label):
            return t
    raise NotFound(f"no tab {tab}")


def _element(s: _Screen, page: r.Tab, query: str) -> r.Element:
    value = s.values.get((page.tab, query))
    return r.Element(role="", name=query, value=value)


def _controls(s: _Screen, page: r.Tab) -> list[r.Element]:
    return [
        r.Element(role="textbox", name=query, value=value)
        for (tab, query), value in s.values.items()
        if tab == page.tab
    ]


def _on_page(s: _Screen, page: r.Tab, what: a.ElementOp) -> r.ElementDone:
    op = a.op_of(what)
    match what:
        case a.WaitForOp(query=query, or_=others, gone=gone, exact=exact):
            queries = ([] if query is None else [query]) + others
            for q in queries:
                if _has(page, q, exact) != gone:
                    element = None if gone else _element(s, page, q)
                    return r.ElementDone(op=op, url=page.url, element=element, matched=q)
            if not queries:
                return r.ElementDone(op=op, url=page.url)
            raise Timeout(f"waited for {' or '.join(map(repr, queries))}: never met")
        case a.HistoryOp():
            return r.ElementDone(op=op, url=page.url, navigated=True)
        case a.ScrollOp(query=None):
            return r.ElementDone(op=op, url=page.url)
    query = what.from_ if isinstance(what, a.DragOp) else str(getattr(what, "query", ""))
    if not _has(page, query, bool(getattr(what, "exact", False))):
        raise NotFound(f"nothing on the page matches {query!r}")
    changed: list[r.Element] = []
    options = None
    match what:
        case a.FillOp(text=text):
            s.values[(page.tab, query)] = text
            changed = [_element(s, page, query)]
        case a.ChooseOp(options=chosen):
            options = list(chosen)
            s.values[(page.tab, query)] = ", ".join(chosen)
            changed = [_element(s, page, query)]
        case a.OptionsOp():
            options = []
    return r.ElementDone(
        op=op, url=page.url, element=_element(s, page, query), changed=changed, options=options
    )


def _cookie_domain(url: str | None) -> str:
    return "" if url is None else (urlsplit(url).hostname or "")


def _cookies(box: MemoryBox, what: a.CookiesWhat) -> r.CookieList:
    host = _cookie_domain(what.url)
    mine = [c for c in box.cookies if what.url is None or c.domain.lstrip(".") == host]
    match what.do:
        case "get":
            return r.CookieList(cookies=mine)
        case "set":
            for c in what.cookies:
                if what.url is None and c.domain is None:
                    raise BadRequest(f"cookie {c.name!r} needs a url or a domain")
                domain = c.domain or host
                box.cookies = [k for k in box.cookies if (k.name, k.domain) != (c.name, domain)]
                box.cookies.append(
                    r.Cookie(
                        name=c.name,
                        value=c.value,
                        domain=domain,
                        path=c.path or "/",
                        http_only=c.http_only,
                        secure=c.secure,
                        same_site=c.same_site,
                        expires=c.expires,
                    )
                )
            return r.CookieList(changed=len(what.cookies))
    box.cookies = [c for c in box.cookies if c not in mine]
    return r.CookieList(changed=len(mine))
