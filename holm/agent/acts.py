"""One action done in the box, and the result it reads back: the agent's one `match` over
every action (adding an operation is a case here, an action and its result in `holm.wire`).

Limits are checked when an action is decoded (`msgspec.Meta` on the action types); what is
left here are the rules a type cannot say.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from holm.agent.browser import browser_state
from holm.agent.browser.pages import BrowserClosing, Pages
from holm.agent.widgets.atspi import TypeInstead
from holm.agent.x11.input import Input
from holm.agent.x11.screen import Screen
from holm.errors import BadRequest, Failed, Transport, Unsupported
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.keys import normalized_chord, normalized_key_name, normalized_then
from holm.wire.values import Motion, Point

if TYPE_CHECKING:
    from holm.agent.agent import Agent


def _xy(point: Point | None) -> tuple[int, int] | None:
    return None if point is None else (point.x, point.y)


def _hold_ms(hold_ms: int | None) -> tuple[int, bool]:
    """The hold time and whether it was asked for (else the batch's end releases)."""
    return (a.DEFAULT_HOLD_MS, False) if hold_ms is None else (hold_ms, True)


# Release tasks nobody awaits, kept referenced until they end.
_pending: set[asyncio.Task[None]] = set()


def _release_later(screen: Screen, kind: str, name: str, token: int, after_ms: int) -> None:
    loop = asyncio.get_running_loop()

    def release() -> None:
        task = loop.create_task(
            screen.on_input(lambda i: i.release_if(kind, name, token), Input.never_waits)
        )
        _pending.add(task)
        task.add_done_callback(_pending.discard)

    loop.call_later(after_ms / 1000, release)


# Text up to this long is typed on the agent's loop (`Screen.on_input`): its key events
# are queued without waiting for the X server, so even the longest blocks about a millisecond.
INLINE_TEXT = 64


def _inline(
    motion: Motion = "instant", keys: bool = False, buttons: bool = False, wheel: bool = False
) -> Callable[[Input], bool] | None:
    """When an input call may run on the agent's loop: when it cannot sleep, that is when
    the pointer jumps (a human path pauses on its way), no key waits for a click to land,
    no press waits for keys to land and no wheel for a release to land."""
    if motion != "instant":
        return None
    waits = [
        ready
        for ready, asked in (
            (Input.keys_ready, keys),
            (Input.buttons_ready, buttons),
            (Input.wheel_ready, wheel),
        )
        if asked
    ]
    if not waits:
        return Input.never_waits
    if len(waits) == 1:
        return waits[0]
    return lambda i: all(ready(i) for ready in waits)


def _seeded(seed: int | None, motion: Motion) -> int | None:
    """A human path with no seed gets one, returned in the result so it can be replayed."""
    if motion == "human" and seed is None:
        return time.time_ns() % 2**31
    return seed


def _pointed(where: tuple[int, int], motion: Motion, seed: int | None) -> r.Pointed:
    return r.Pointed(at=Point(*where), seed=seed if motion == "human" else None)


def _decoded(contents_base64: str) -> bytes:
    try:
        return base64.b64decode(contents_base64, validate=True)
    except ValueError:
        raise BadRequest("contents_base64 is not valid base64") from None


async def act(agent: Agent, index: int, action: a.Action) -> r.ActionResult:
    """Do `action` (on screen `index` when it uses one) and answer its `Result`."""
    match action:
        case a.Exec(what=what):
            return await agent.exec(a.plain_argv(what.argv), what.timeout_ms, a.plain_env(what.env))
        case a.ReadFile(path=path):
            data = await agent.read_file(path)
            encoded = base64.b64encode(data).decode()
            return r.FileData(path=path, size=len(data), contents_base64=encoded)
        case a.WriteFile(what=what):
            data = _decoded(what.contents_base64)
            await agent.write_file(what.path, data)
            return r.FileSaved(path=what.path, size=len(data))
        case a.ListFiles(path=path):
            return r.FileList(path=path, entries=await agent.list_files(path))
        case a.Grep(what=g):
            matches, cut = await agent.grep(g.pattern, g.path, g.include, g.ignore_case, g.limit)
            return r.GrepResult(matches=matches, cut=cut)
        case a.Glob(what=g):
            paths, cut = await agent.glob(g.pattern, g.path, g.limit)
            return r.GlobResult(paths=paths, cut=cut)
        case a.Apps():
            apps = [
                r.AppInfo(name=app.name, description=app.description)
                for app in agent.catalog.names()
            ]
            return r.AppList(apps=apps)
        case a.Wait(ms=ms):
            await asyncio.sleep(ms / 1000)
            return r.Waited(waited_ms=ms)
    if isinstance(action, PAGE_ACTIONS):
        agent.screen(index)
        return await _on_pages(agent, index, action)
    return await _on_screen(agent, agent.screen(index), action)


async def _on_screen(agent: Agent, screen: Screen, action: a.Action) -> r.ActionResult:
    match action:
        case a.Move(to=to, motion=motion, seed=seed, pause_ms=pause_ms):
            seed = _seeded(seed, motion)
            await screen.on_input(
                lambda i: i.move((to.x, to.y), motion, seed, pause_ms),
                _inline(motion) if pause_ms == 0 else None,
            )
            return _pointed((to.x, to.y), motion, seed)
        case a.Click(at=at, button=button, held=held, motion=motion, seed=seed, count=count):
            seed = _seeded(seed, motion)
            where = await screen.on_input(
                lambda i: i.click(_xy(at), button, held, motion, seed, count),
                _inline(motion, keys=bool(held), buttons=True) if count == 1 else None,
            )
            return _pointed(where, motion, seed)
        case a.DoubleClick(at=at, button=button, held=held, motion=motion, seed=seed):
            seed = _seeded(seed, motion)
            where = await screen.on_input(lambda i: i.click(_xy(at), button, held, motion, seed, 2))
            return _pointed(where, motion, seed)
        case a.Drag(to=to, from_=start, button=button, held=held, motion=motion, seed=seed):
            seed = _seeded(seed, motion)

            def drag(i: Input) -> tuple[int, int]:
                first = _xy(start) or i.position()
                return i.drag([first, (to.x, to.y)], button, held, motion, seed)

            return _pointed(await screen.on_input(drag), motion, seed)
        case a.Path(through=through, button=button, held=held, motion=motion, seed=seed):
            seed = _seeded(seed, motion)
            points = [(p.x, p.y) for p in through]
            where = await screen.on_input(lambda i: i.drag(points, button, held, motion, seed))
            return _pointed(where, motion, seed)
        case a.MouseDown(at=at, button=button, motion=motion, seed=seed, hold_ms=hold_ms):
            seed = _seeded(seed, motion)
            hold, explicit = _hold_ms(hold_ms)
            release_at = int(time.time() * 1000) + hold

            def down(i: Input) -> tuple[tuple[int, int], int]:
                where = i.button_down(_xy(at), button, motion, seed)
                return where, i.hold(i.buttons, button, release_at, explicit)

            where, token = await screen.on_input(down, _inline(motion, buttons=True))
            _release_later(screen, "button", button, token, hold)
            pointed = _pointed(where, motion, seed)
            return r.ButtonHeld(at=pointed.at, seed=pointed.seed, release_at_ms=release_at)
        case a.MouseUp(at=at, button=button):
            where = await screen.on_input(lambda i: i.button_up(_xy(at), button), Input.never_waits)
            return r.Pointed(at=Point(*where))
        case a.Scroll(at=at):
            return r.Pointed(at=Point(*await _scroll(agent, screen, action)))
        case a.Type(text=text, delay_ms=delay_ms):
            quick = delay_ms == 0 and len(text) <= INLINE_TEXT
            typed = await screen.on_input(
                lambda i: i.type_text(text, delay_ms), _inline(keys=True) if quick else None
            )
            return r.Typed(typed=typed)
        case a.Press(chord=chord_in, then=then_in, held=held):
            chord, then = normalized_chord(chord_in), normalized_then(then_in)
            if not chord and not then:
                raise BadRequest("press needs keys in `chord` or `then`")
            await screen.on_input(lambda i: i.press(chord, then, held), _inline(keys=True))
            return r.Pressed(pressed=[*chord, *then])
        case a.KeyDown(key=key_in, hold_ms=hold_ms):
            key = normalized_key_name(key_in)
            hold, explicit = _hold_ms(hold_ms)
            release_at = int(time.time() * 1000) + hold

            def key_down(i: Input) -> int:
                i.key_down(key)
                return i.hold(i.keys, key, release_at, explicit)

            token = await screen.on_input(key_down, _inline(keys=True))
            _release_later(screen, "key", key, token, hold)
            return r.KeyHeld(key=key, release_at_ms=release_at)
        case a.KeyUp(key=key_in):
            up = normalized_key_name(key_in)
            await screen.on_input(lambda i: i.key_up(up), Input.never_waits)
            return r.KeyReleased(key=up)
        case a.WaitStill(settle_ms=settle_ms, within_ms=within_ms):
            # Both stop at 30 s (docs/api.md): a longer wait is capped, not refused.
            return await screen.wait_still(
                min(settle_ms, a.MAX_WAIT_MS), min(within_ms, a.MAX_WAIT_MS)
            )
        case a.AwaitWindow(what=what):
            found = await screen.wait_window(what.class_, what.title, what.within_ms)
            return r.FoundWindow(window=found)
        case a.Capture(what=what):
            if what.tab is not None:
                return await _on_pages(agent, screen.index, action)
            frame = await screen.frame(
                window=what.window, region=what.region, scale=what.scale, pointer=what.pointer
            )
            return r.Captured(
                hash=frame.hash,
                unchanged=False,
                width=frame.width,
                height=frame.height,
                png_base64=base64.b64encode(frame.png or b"").decode(),
            )
        case a.Cursor():
            return await screen.cursor()
        case a.Windows(active=active):
            if active:
                front = await screen.active_window()
                return r.WindowList(windows=[] if front is None else [front])
            return r.WindowList(windows=await screen.windows())
        case a.OnWindow(window=window, what=what):
            return await _on_window(screen, window, what)
        case a.Launch(app=app, args=args):
            return r.FoundWindow(window=await agent.launch(screen.index, app, args))
        case a.Clipboard(selection=selection, text=None):
            text = await screen.clipboard_get(selection)
            return r.ClipboardView(selection=selection, length=len(text.encode()), text=text)
        case a.Clipboard(selection=selection, text=str(text)):
            await screen.clipboard_set(selection, text)
            return r.ClipboardView(selection=selection, length=len(text.encode()))
        case a.Record(what=what):
            return await agent.record(screen.index, what)
        case a.OnNode(what=what):
            return await _on_node(agent, screen, what)
        case _:
            raise Unsupported(f"{type(action).__name__} is not supported by this agent yet")


# A page's wheel event's modifiers, as DevTools numbers them.
_CDP_MODIFIERS = {"alt": 1, "ctrl": 2, "super": 4, "shift": 8}


async def _scroll(agent: Agent, screen: Screen, action: a.Scroll) -> tuple[int, int]:
    """Turn the wheel `dx`/`dy` notches; then scroll `dx_px`/`dy_px` pixels: a wheel event of
    that many pixels on the front page of the screen's Chromium when the pointer is over
    it (X's wheel moves a page by whole notches of 120 pixels), else the nearest notches."""
    at, held, dx, dy = _xy(action.at), action.held, action.dx, action.dy
    px, py = action.dx_px, action.dy_px
    if not (dx or dy or px or py):
        raise BadRequest("scroll needs dx, dy, dx_px or dy_px")
    inline = _inline(keys=bool(held), wheel=True)
    if dx or dy:
        where = await screen.on_input(lambda i: i.scroll(at, dx, dy, held), inline)
    else:
        # The page's wheel goes through DevTools: it waits for the last release here.
        def point(i: Input) -> tuple[int, int]:
            i.let_the_release_land()
            return i.point_at(at)

        where = await screen.on_input(point, Input.wheel_ready)
    if not (px or py):
        return where
    mods = sum(_CDP_MODIFIERS[m] for m in set(held))
    if not await _wheel_on_page(agent, screen, where, px, py, mods):
        nx, ny = a.notches_of(px), a.notches_of(py)
        await screen.on_input(lambda i: i.scroll(None, nx, ny, held), inline)
    return where


async def _wheel_on_page(
    agent: Agent, screen: Screen, at: tuple[int, int], px: int, py: int, mods: int
) -> bool:
    """Scroll the page under `at` by pixels, when the front window is Chromium's and `at` is
    on its page; False when it is not."""
    if screen.devtools_port is None:
        return False
    front = await screen.active_window()
    if front is None or front.class_.lower() != "chromium":
        return False
    return await (await agent.pages(screen.index)).wheel(at, px, py, mods)


async def _on_node(agent: Agent, screen: Screen, what: a.NodeOp) -> r.NodeDone:
    """A widget operation among this screen's applications (one bus serves the box's
    screens); a value typed goes to this screen's keyboard."""
    widgets = agent.widgets()
    where = widgets.where(screen.display_name, (s.display_name for s in agent.screens))
    try:
        return await widgets.act(what, where)
    except TypeInstead as focused:
        if not isinstance(what, a.NodeSetOp):
            raise
        path, value = focused.path, what.value
    # The field has the focus: replace all its text with the value, as a person would.
    select_all, erase = normalized_chord("ctrl+a"), normalized_then(["BackSpace"])
    await screen.on_input(lambda i: i.press(select_all, erase, []))
    await screen.on_input(lambda i: i.type_text(value, 0))
    return await widgets.typed(path, value, where)


async def _on_window(screen: Screen, window: str, what: a.WindowOp) -> r.WindowChanged:
    match what.do:
        case "focus":
            await screen.focus_window(window)
            return r.WindowChanged(id=window)
        case "close":
            await screen.close_window(window)
            return r.WindowChanged(id=window, closed=True)
        case "arrange":
            if what.how is None:
                raise BadRequest("arrange needs `how`")
            found = await screen.arrange_window(window, what.how)
            return r.WindowChanged(id=window, window=found)
    raise BadRequest(f"unknown window operation {what.do!r}")


# The actions done on the screen's Chromium (and `capture` of a tab).
PAGE_ACTIONS = (
    a.OpenUrl,
    a.Tabs,
    a.OnTab,
    a.OnPage,
    a.Look,
    a.Snapshot,
    a.Read,
    a.Evaluate,
    a.PageShot,
    a.PagePdf,
    a.Console,
    a.StateSave,
    a.StateLoad,
    a.Cookies,
    a.Dialog,
)
# What is done again on a browser that ended under it: listing the tabs, and opening a
# page (the browser comes back on a blank one). Anything else acted on a page that is gone.
_REDONE = (a.Tabs, a.OpenUrl)


async def _on_pages(agent: Agent, index: int, action: a.Action) -> r.ActionResult:
    """A page action, on the screen's Chromium once it is up (it may be starting again:
    supervisor.py); one that lost the browser while it ran fails naming why, since the
    browser comes back with a blank page, not the one the action was on."""
    pages = await agent.pages(index)
    browser = agent.browser(index)
    starts = 0 if browser is None else browser.starts
    try:
        done = await _page_action(agent, pages, action)
    except BrowserClosing as exc:
        # Nothing was done: it is done on the browser that comes back.
        if browser is None or not await browser.ending(starts):
            raise Failed(f"screen {index}'s Chromium does not answer: {exc}") from None
        return await _page_action(agent, await agent.pages(index), action)
    except Transport as exc:
        if browser is None or not await browser.ending(starts):
            raise
        if isinstance(action, _REDONE):
            return await _page_action(agent, await agent.pages(index), action)
        raise Failed(
            f"screen {index}'s Chromium ended during the action ({exc}); "
            "it is started again with a blank page"
        ) from None
    # No tab: the browser is closing its last window, and will be back with one.
    closing = isinstance(done, r.TabList) and not done.tabs and browser is not None
    if closing and browser is not None and await browser.ending(starts):
        return r.TabList(tabs=await (await agent.pages(index)).tabs())
    return done


async def _page_action(agent: Agent, pages: Pages, action: a.Action) -> r.ActionResult:
    if isinstance(action, a.Capture) and action.what.tab is not None:
        return await pages.capture(action.what.tab)
    match action:
        case a.OpenUrl(url=url, target=target, label=label):
            return await pages.open_url(url, target, label)
        case a.Tabs():
            return r.TabList(tabs=await pages.tabs())
        case a.OnTab(tab=tab, close=close):
            return await pages.on_tab(tab, close)
        case a.OnPage(what=what, tab=tab, settle_ms=settle_ms):
            return await pages.on_page(what, tab, settle_ms)
        case a.Look(what=what):
            return await pages.look(what)
        case a.Snapshot(what=what):
            return await pages.snapshot(what)
        case a.Read(what=what):
            return await pages.read(what)
        case a.Evaluate(what=what, tab=tab):
            return await pages.evaluate(what, tab)
        case a.PageShot(what=what):
            return await pages.page_shot(what)
        case a.PagePdf(what=what):
            data = await pages.pdf(what)
            await agent.write_file(what.path, data)
            return r.FileSaved(path=what.path, size=len(data))
        case a.Console(what=what):
            return await pages.console(what)
        case a.StateSave(what=what):
            if what.name is not None:
                raise BadRequest("a named state is kept by the server, not the box")
            return await browser_state.save_state(pages, what)
        case a.StateLoad(what=what):
            if what.session_json is None:
                raise BadRequest("the box loads a state from session_json")
            return await browser_state.load_state(pages, what.session_json)
        case a.Cookies(what=what):
            return await browser_state.cookies(pages, what)
        case a.Dialog(accept=accept, text=prompt):
            return await pages.dialog(accept, prompt)
    raise Unsupported(f"{type(action).__name__} is not a page action")
