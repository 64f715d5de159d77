"""The agent: the box's screens, its catalog and its files, and what each request does."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, TypeVar

import msgspec

from holm.agent import files
from holm.agent.acts import act
from holm.agent.browser import devtools_bridge
from holm.agent.browser.pages import Pages
from holm.agent.browser.supervisor import Browser
from holm.agent.desktop import commands, desktop_up, features_up, processes
from holm.agent.desktop.catalog import AppCatalog
from holm.agent.desktop.screen_recording import Recorder
from holm.agent.desktop.viewer_socket import ViewerSocket
from holm.agent.frames.tiles import FrameHasher
from holm.agent.wayland import dock, sway_up
from holm.agent.wayland.maximised_proxy import MaximisedProxy
from holm.agent.wayland.screen import Screen as WaylandScreen
from holm.agent.widgets import a11y_bus
from holm.agent.widgets.atspi import Widgets
from holm.agent.x11.screen import Screen
from holm.errors import BadRequest, Failed, HolmError, ScreenUnavailable, Timeout, Unsupported
from holm.wire import agent_protocol as p
from holm.wire.actions import RecordWhat
from holm.wire.results import ExecResult, FileInfo, GrepMatch, Recording, Tab, WindowInfo
from holm.wire.runtime import BatchEnd, Held, Released
from holm.wire.spec import Feature

log = logging.getLogger("holm.agent")
T = TypeVar("T")

LAUNCH_WITHIN_MS = 30_000
# A new Chromium, once drawn, still loads its blank page ("Loading…", a stop button) and
# animates the tab's icon in; a screen is up once that is over and the screen has stayed the
# same this long (or, for a screen that never rests, after START_STILL_WITHIN_MS). Otherwise
# a box's first frames, and the last frame of a run of commands only, would be whichever
# moment of that start the run happened to end on, and its forks would not end on its
# pixels.
START_STILL_MS = 500
START_STILL_WITHIN_MS = 5_000
MAX_READY_MS = 600_000


class Options(msgspec.Struct, kw_only=True):
    run_dir: Path
    screens: int
    width: int
    height: int
    display_base: int = 0
    chromium: bool = True
    # The spec's features; those that start something are started by features_up.py and
    # a11y_bus.py.
    features: list[Feature] = msgspec.field(default_factory=list)
    # The server's key for frame hashes (tiles.py): the same pixels hash the same in every
    # box of one server.
    frame_key: bytes = b""
    home: str = msgspec.field(default_factory=lambda: os.environ.get("HOME", "/root"))
    # The display server of every screen: Xvfb, or a headless sway (holm/agent/wayland/).
    server: Literal["x11", "wayland"] = "x11"


class Agent:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.home = options.home
        self.run_dir = options.run_dir
        self._png_pool = ThreadPoolExecutor(2, thread_name_prefix="png")
        # exec and files: each call blocks a thread for as long as it runs.
        self._work_pool = ThreadPoolExecutor(64, thread_name_prefix="work")
        hasher = FrameHasher(options.frame_key)
        self.wayland = options.server == "wayland"
        kind = WaylandScreen if self.wayland else Screen
        self.screens: list[Screen] = [
            kind(i, options.width, options.height, self._png_pool, hasher)
            for i in range(options.screens)
        ]
        self.catalog = AppCatalog(self.home)
        self.recorders = [Recorder(i, self.home, self.run_dir) for i in range(options.screens)]
        self.ready = asyncio.Event()
        self.failure: str | None = None
        self._pages: dict[int, Pages] = {}
        # Each screen's Chromium, started again whenever it ends (supervisor.py).
        self._browsers: dict[int, Browser] = {}
        self._warming: set[asyncio.Task[None]] = set()
        # Each screen's DevTools, on a socket in the run folder (devtools_bridge.py).
        self._bridges: list[asyncio.AbstractServer] = []
        # Each screen's viewer socket, which starts an x11vnc per viewer (viewer_socket.py).
        self._viewers: list[ViewerSocket] = []
        self._display_lock = asyncio.Lock()
        # What every program of the box has in its environment besides box_env's (the
        # sound server's address, the accessibility bus's, or that there is none).
        self._feature_env: dict[str, str] = dict(a11y_bus.WITHOUT)
        self._widgets: Widgets | None = None

    # Bring-up

    async def bring_up(self) -> None:
        failures: list[str] = []
        if "wide_fonts" not in self.options.features:
            self._feature_env.update(features_up.hide_wide_fonts(self.run_dir))
        # The features' services start while the screens' X servers do: Xvfb needs none of
        # them, and every program after it starts with their addresses (_bring_up waits).
        services = asyncio.create_task(self._start_services(failures))
        await asyncio.gather(*(self._bring_up(s, services) for s in self.screens))
        # A service that failed in an unforeseen way failed each screen that waited for it.
        with contextlib.suppress(Exception):
            await services
        failures += [s.failure for s in self.screens if s.failure]
        self.failure = "; ".join(failures) if failures else None
        if self.failure:
            log.error("the desktop did not come up: %s", self.failure)
        else:
            log.info("the desktop is up: %s", ", ".join(s.display_name for s in self.screens))
        self.ready.set()

    async def _start_services(self, failures: list[str]) -> None:
        """The sound server and the accessibility bus, for the features that want them; what
        did not start goes into `failures`."""
        if "audio" in self.options.features:
            # Before any program of a screen, so that every Chromium plays to it.
            try:
                audio = await asyncio.to_thread(
                    features_up.start_audio, self.run_dir, self._env(None)
                )
                self._feature_env.update(audio)
            except desktop_up.StartFailed as exc:
                failures.append(str(exc))
        if "accessibility" in self.options.features:
            # Before any program of a screen: they find the bus by the address they start with.
            try:
                address = await asyncio.to_thread(a11y_bus.start, self.run_dir, self._env(None))
            except a11y_bus.BusFailed as exc:
                failures.append(str(exc))
            else:
                os.environ["DBUS_SESSION_BUS_ADDRESS"] = address
                for name in a11y_bus.WITHOUT:
                    self._feature_env.pop(name, None)
                self._feature_env.update(a11y_bus.env_with(address))
                self._widgets = Widgets()

    async def _bring_up(self, screen: Screen, services: asyncio.Task[None]) -> None:
        """A screen: its display server (`_start_display`: Xvfb, or a sway), its
        connections, its viewer, its window manager and dock, and its Chromium."""
        o = self.options
        i = screen.index
        part = "the compositor (sway)" if self.wayland else "the X display (Xvfb)"
        connecting: asyncio.Task[None] | None = None
        try:
            name = await self._start_display(screen)
            # The screen's own connections open while its programs start: none of these
            # needs them, and the tile grid subscribes to damage before it reads a pixel,
            # so what the programs draw meanwhile is read at its first hash.
            connecting = asyncio.create_task(screen.connect(name))
            part = "the sound server or the accessibility bus"
            await asyncio.shield(services)
            env = self._env(name)
            if isinstance(screen, WaylandScreen) and screen.sway is not None:
                sway = screen.sway
                part = "the viewer's VNC server (wayvnc)"
                screen.vnc_socket = await asyncio.to_thread(
                    sway_up.start_wayvnc, i, sway, self.run_dir, env
                )
                if "dock" in o.features:
                    part = "the dock (waybar)"
                    await asyncio.to_thread(
                        dock.start_dock, i, sway.ipc, o.height, self.run_dir, env
                    )
            else:
                part = "the viewer socket"
                viewer = ViewerSocket(i, name, self.run_dir, env)
                self._viewers.append(viewer)
                screen.vnc_socket = str(viewer.path)
                part = "the window manager (openbox)"
                await asyncio.to_thread(desktop_up.start_window_manager, i, name, self.run_dir, env)
                if "dock" in o.features:
                    part = "the dock (tint2)"
                    await asyncio.to_thread(features_up.start_dock, i, name, self.run_dir, env)
            browser = None
            if o.chromium:
                part = "chromium"
                proc, port = await self._start_chromium(screen)
                screen.devtools_port = port
                browser = Browser(
                    i, lambda: self._start_chromium(screen), lambda new: self._moved(i, new)
                )
                browser.keep(proc, port)
                self._browsers[i] = browser
                self._bridges.append(await devtools_bridge.bridge(self.run_dir, i, browser.wait_up))
            part = (
                "the screen's Wayland connections" if self.wayland else "the screen's X connections"
            )
            await connecting
            if browser is not None:
                part = "chromium"
                await screen.wait_still(START_STILL_MS, START_STILL_WITHIN_MS)
            screen.up.set()
            if browser is not None:
                self._warm(i)
        except desktop_up.StartFailed as exc:
            screen.failure = str(exc)
        except Exception as exc:
            log.exception("screen %d", i)
            screen.failure = f"screen {i}: {part} did not start: {type(exc).__name__}: {exc}"
        finally:
            if connecting is not None:
                # Done unless a part after the display failed first (then its own failure,
                # if any, is not the screen's).
                connecting.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await connecting

    async def _start_display(self, screen: Screen) -> str:
        """The screen's display server, started; answers its name (`:N`, or the sway's
        Wayland socket), which the screen's connections and programs are given."""
        o = self.options
        if isinstance(screen, WaylandScreen):
            screen.sway = await asyncio.to_thread(
                sway_up.start_sway,
                screen.index,
                o.width,
                o.height,
                self.run_dir,
                self._env(None),
                "x11_apps" in o.features,
            )
            screen.display_name = screen.sway.socket
            if o.chromium:
                # Chromium reaches sway through it, so its window is told it is maximised.
                screen.chromium_proxy = MaximisedProxy(
                    self.run_dir / f"wayland-chromium-{screen.index}.sock", screen.sway.socket
                )
            return screen.display_name
        async with self._display_lock:
            # Screens start one after another from the base, so they do not race each
            # other for one display number.
            base = max([o.display_base] + [_number(s) + 1 for s in self.screens if s.display_name])
            number, _ = await asyncio.to_thread(
                desktop_up.start_xvfb,
                screen.index,
                o.width,
                o.height,
                base,
                self.run_dir,
                self._env(None),
            )
            screen.display_name = f":{number}"
        return screen.display_name

    async def _start_chromium(self, screen: Screen) -> tuple[subprocess.Popen[bytes], int]:
        """Start the screen's Chromium (on its profile, a blank page) and answer it once
        its window is drawn, with its DevTools port."""
        env = self._env(screen.display_name)
        wayland = isinstance(screen, WaylandScreen) and screen.sway is not None
        if isinstance(screen, WaylandScreen) and screen.chromium_proxy is not None:
            env["WAYLAND_DISPLAY"] = str(screen.chromium_proxy.path)
        proc = await asyncio.to_thread(
            desktop_up.start_chromium,
            screen.index,
            self.home,
            self.run_dir,
            env,
            accessibility=self._widgets is not None,
            extra_flags=sway_up.CHROMIUM_WAYLAND_FLAGS if wayland else (),
        )
        try:
            if isinstance(screen, WaylandScreen) and screen.sway is not None:
                profile = desktop_up.chromium_profile(self.home, screen.index)
                port = await asyncio.to_thread(
                    sway_up.wait_chromium,
                    screen.index,
                    screen.sway.ipc,
                    profile,
                    proc,
                    self.run_dir,
                )
                return proc, port
            port = await asyncio.to_thread(
                desktop_up.wait_chromium,
                screen.index,
                screen.display_name,
                self.home,
                proc,
                self.run_dir,
            )
        except BaseException:
            processes.kill_group(proc.pid)
            raise
        return proc, port

    async def _moved(self, index: int, port: int) -> None:
        """The screen's Chromium started again, on `port`: its pages follow it."""
        self.screens[index].devtools_port = port
        pages = self._pages.get(index)
        if pages is not None:
            await pages.follow(port)
        self._warm(index)

    def _warm(self, index: int) -> None:
        """Open the front tab's session in the background: the box is ready without it,
        and its first page operation finds it open."""

        async def warm() -> None:
            with contextlib.suppress(HolmError):
                await (await self.pages(index)).warm()

        warming = asyncio.create_task(warm())
        self._warming.add(warming)
        warming.add_done_callback(self._warming.discard)

    def _env(self, display: str | None) -> dict[str, str]:
        if not self.wayland:
            return processes.box_env(self.home, display, self._feature_env)
        # A Wayland screen's "display" is its compositor's socket: its programs find it
        # (and the screen's sway) by their environment, and have no DISPLAY.
        env = processes.box_env(self.home, None, self._feature_env)
        for s in self.screens:
            if display and s.display_name == display and isinstance(s, WaylandScreen) and s.sway:
                env.update(s.sway.env())
        return env

    async def wait_ready(self, timeout_ms: int) -> None:
        if not 0 < timeout_ms <= MAX_READY_MS:
            raise BadRequest(f"timeout_ms must be 1 to {MAX_READY_MS}")
        try:
            await asyncio.wait_for(self.ready.wait(), timeout_ms / 1000)
        except TimeoutError:
            starting = [str(s.index) for s in self.screens if not s.up.is_set()]
            raise Timeout(
                f"the desktop was not up within {timeout_ms} ms (screens still starting: "
                f"{', '.join(starting)})"
            ) from None
        if self.failure:
            raise Failed(self.failure)

    def info(self) -> p.AgentInfo:
        return p.AgentInfo(
            pid=os.getpid(),
            ready=self.ready.is_set() and self.failure is None,
            failure=self.failure,
            ordered_end=True,
            looks_before=True,
            screens=[
                p.ScreenInfo(
                    screen=s.index,
                    display=s.display_name,
                    width=s.width,
                    height=s.height,
                    vnc_socket=s.vnc_socket,
                    devtools_port=s.devtools_port,
                )
                for s in self.screens
            ],
        )

    def screen(self, index: int) -> Screen:
        if not 0 <= index < len(self.screens):
            raise ScreenUnavailable(
                f"no screen {index}: this box has {len(self.screens)}", retryable=False
            )
        return self.screens[index]

    def browser(self, index: int) -> Browser | None:
        return self._browsers.get(index)

    def _browser(self, index: int) -> Browser:
        self.screen(index)
        browser = self._browsers.get(index)
        if browser is None:
            if not self.options.chromium:
                raise Unsupported("this box runs no Chromium (--no-chromium)")
            raise ScreenUnavailable(f"screen {index}'s Chromium is not up")
        return browser

    async def pages(self, index: int) -> Pages:
        """The pages of the screen's Chromium, once it is up (it may be starting again)."""
        port = await self._browser(index).wait_up()
        if index not in self._pages:
            screen = self.screens[index]
            self._pages[index] = Pages(
                port,
                screen.window_changes,
                screen.pointer_landed,
                screen.key_landed,
                screen.pointer_released,
            )
        return self._pages[index]

    def widgets(self) -> Widgets:
        if self._widgets is None:
            raise Unsupported("native widgets need a box with the `accessibility` feature")
        return self._widgets

    async def close(self) -> None:
        # Before the box's processes are ended: a recording stopped so ends its file cleanly.
        await asyncio.gather(*(asyncio.to_thread(r.close) for r in self.recorders))
        if self._widgets is not None:
            self._widgets.close()
        # Before the box's processes are ended, so that a browser ended then is not started
        # again.
        await asyncio.gather(*(browser.close() for browser in self._browsers.values()))
        for bridge in self._bridges:
            bridge.close()
        await asyncio.gather(*(pages.close() for pages in self._pages.values()))
        for s in self.screens:
            s.close()
        self._png_pool.shutdown(wait=False, cancel_futures=True)
        self._work_pool.shutdown(wait=False, cancel_futures=True)

    # Work in threads

    async def _work(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._work_pool, fn, *args)

    async def exec(
        self, argv: list[str], timeout_ms: int, extra_env: dict[str, str] | None = None
    ) -> ExecResult:
        # The request's variables over the box's own (DISPLAY and the rest stay the box's
        # unless the request names them).
        env = {**self._env(self.screens[0].display_name or None), **(extra_env or {})}
        result: ExecResult = await self._work(
            lambda: commands.run(argv, timeout_ms, home=self.home, env=env)
        )
        return result

    async def read_file(self, path: str) -> bytes:
        data: bytes = await self._work(files.read, path, self.home)
        return data

    async def write_file(self, path: str, data: bytes) -> None:
        await self._work(files.write, path, data, self.home)

    async def list_files(self, path: str) -> list[FileInfo]:
        found: list[FileInfo] = await self._work(files.list_dir, path, self.home)
        return found

    async def grep(
        self, pattern: str, path: str, include: str | None, ignore_case: bool, limit: int
    ) -> tuple[list[GrepMatch], bool]:
        found: tuple[list[GrepMatch], bool] = await self._work(
            files.grep, pattern, path, include, ignore_case, limit, self.home
        )
        return found

    async def glob(self, pattern: str, path: str, limit: int) -> tuple[list[str], bool]:
        found: tuple[list[str], bool] = await self._work(
            files.glob, pattern, path, limit, self.home
        )
        return found

    # Apps

    async def launch(self, index: int, name: str, args: list[str]) -> WindowInfo:
        screen = self.screen(index)
        app = self.catalog.resolve(name)
        before = await screen.window_ids()
        argv = self.catalog.argv(app, index, args)
        log_path = self.run_dir / f"app-{app.name}-{index}.log"
        try:
            proc = await asyncio.to_thread(
                processes.spawn,
                argv,
                env=self._env(screen.display_name),
                cwd=self.home,
                log_path=log_path,
            )
        except OSError as exc:
            raise Failed(f"could not start {app.name}: {exc.strerror or exc}") from None
        processes.supervise(f"{app.name} (screen {index}, pid {proc.pid})", proc)

        def still_trying() -> None:
            # A launcher that hands over to a running instance ends with 0 (chromium):
            # only a failure ends the wait early.
            if proc.returncode not in (None, 0):
                tail = processes.log_tail(log_path)
                raise Failed(f"{app.name} ended with {proc.returncode}: {tail}")

        return await screen.wait_window(
            app.window_class, None, LAUNCH_WITHIN_MS, ignore=before, still_trying=still_trying
        )

    # Recording

    async def record(self, index: int, what: RecordWhat) -> Recording:
        screen = self.screen(index)
        recorder = self.recorders[index]
        match what.do:
            case "start":
                if not screen.up.is_set():
                    raise ScreenUnavailable(f"screen {index} is not up")
                env = self._env(screen.display_name)
                frames = screen.last_pixels if isinstance(screen, WaylandScreen) else None
                return await asyncio.to_thread(
                    recorder.start,
                    screen.display_name,
                    screen.width,
                    screen.height,
                    what.fps,
                    env,
                    frames,
                )
            case "stop":
                return await asyncio.to_thread(recorder.stop)
            case "status":
                return await asyncio.to_thread(recorder.status)

    # Requests

    async def answer(self, request: p.Request) -> Any:
        match request:
            case p.Ping():
                return "pong"
            case p.Ready(timeout_ms=timeout_ms):
                await self.wait_ready(timeout_ms)
                return self.info()
            case p.Info():
                return self.info()
            case p.Act(screen=screen, action=action):
                return await act(self, screen, action)
            case p.EndBatch(screen=screen):
                return await self.end_batch(screen)
            case p.Frame(screen=screen, have=have, window=window, region=region, scale=scale):
                return await self.screen(screen).frame(
                    have, window, region, scale, encoding=request.encoding
                )
            case p.FrameHash(screen=screen):
                return await self.screen(screen).frame_hash()
            case p.KeptFrame(screen=screen, hash=digest):
                return await self.screen(screen).kept_frame(digest)
            case p.AwaitChange(screen=screen, after=after, within_ms=within_ms):
                return await self.screen(screen).await_change(after, within_ms)
            case p.AwaitBrowser(screen=screen, after=after, within_ms=within_ms):
                return await self._browser(screen).await_start(after, within_ms)
            case p.DefineApps(apps=apps):
                self.catalog.define(apps)
                return [app.name for app in self.catalog.names()]
        raise BadRequest(f"unknown request {type(request).__name__}")

    async def look_before(self, request: p.LookBefore, read: asyncio.Future[None]) -> Any:
        """`p.LookBefore`: `read` is resolved once the screen's pixels are read (or the
        look failed), so the acts behind it may go."""
        try:
            screen = self.screen(request.screen)
        except BaseException:
            read.set_result(None)
            raise
        return await screen.look_before(request.have, read, request.with_png)

    async def end_batch(self, index: int) -> BatchEnd:
        screen = self.screen(index)
        buttons, keys, held_buttons, held_keys, release_at = await screen.end_input_batch()
        # Most batches change neither the windows nor the tabs: both lists are then known
        # here, and a gather's tasks (about 0.15 ms of the agent's CPU) are spared.
        known_windows, known_tabs = screen.known_windows(), self._known_tabs(index)
        if known_windows is not None and known_tabs is not None:
            windows, tabs = known_windows, known_tabs
        elif known_tabs is not None:
            windows, tabs = await screen.windows(), known_tabs
        elif known_windows is not None:
            windows, tabs = known_windows, await self._tabs(index)
        else:
            windows, tabs = await asyncio.gather(screen.windows(), self._tabs(index))
        return BatchEnd(
            released=Released(buttons=buttons, keys=keys),
            held=Held(buttons=held_buttons, keys=held_keys, release_at_ms=release_at),
            windows=windows,
            tabs=tabs,
        )

    def _known_tabs(self, index: int) -> list[Tab] | None:
        browser, pages = self._browsers.get(index), self._pages.get(index)
        if browser is None or browser.failure is not None:
            return []
        if browser.down or pages is None:
            return None
        return pages.known_tabs()

    async def _tabs(self, index: int) -> list[Tab]:
        try:
            return await (await self.pages(index)).tabs()
        except HolmError:
            # A screen with no Chromium (or one not up) has no tabs to list.
            return []


def _number(screen: Screen) -> int:
    # X11 screens only: a Wayland screen's display is its socket's path.
    return int(screen.display_name.lstrip(":"))
