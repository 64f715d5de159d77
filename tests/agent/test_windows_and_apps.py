"""Windows through EWMH, apps from the catalog, and the clipboard, on the real agent."""

from __future__ import annotations

import asyncio

import pytest
from desktop_kit import (
    active_window,
    arrange,
    clipboard,
    close_window,
    focus,
    launch,
    set_clipboard,
    tabs,
    windows,
)

from holm.adapters.agent_desktop import AgentDesktop
from holm.errors import NotFound, Timeout
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.actions import Arrange
from holm.wire.spec import AppDefinition
from holm.wire.values import Point

from .conftest import RunningAgent, page_title, write_page


async def test_focus_and_arrange_change_what_windows_report(desktop: AgentDesktop) -> None:
    editor = await launch(desktop, 1, "mousepad")
    assert editor.class_ == "Mousepad"
    term = await launch(desktop, 1, "xterm")
    await focus(desktop, 1, term.id)
    active = await active_window(desktop, 1)
    assert active is not None and active.id == term.id and active.active
    await focus(desktop, 1, editor.id)
    listed = {w.id: w for w in await windows(desktop, 1)}
    assert listed[editor.id].active and not listed[term.id].active
    assert await active_window(desktop, 1) == listed[editor.id]

    moved = await arrange(desktop, 1, editor.id, Arrange(how="at", to=Point(x=300, y=200)))
    assert (moved.x, moved.y) == (300, 200)
    again = {w.id: w for w in await windows(desktop, 1)}[editor.id]
    assert (again.x, again.y) == (300, 200)
    sized = await arrange(desktop, 1, editor.id, Arrange(how="size", width=500, height=400))
    assert (sized.width, sized.height) == (500, 400)
    assert {w.id: (w.x, w.y, w.width, w.height) for w in await windows(desktop, 1)}[editor.id] == (
        sized.x,
        sized.y,
        500,
        400,
    )
    big = await arrange(desktop, 1, editor.id, Arrange(how="maximise"))
    assert big.width > 1200
    small = await arrange(desktop, 1, editor.id, Arrange(how="minimise"))
    assert small.minimised
    back = await arrange(desktop, 1, editor.id, Arrange(how="restore"))
    assert not back.minimised and back.width < 1200

    await close_window(desktop, 1, term.id)
    await close_window(desktop, 1, editor.id)
    for _ in range(100):
        ids = {w.id for w in await windows(desktop, 1)}
        if not ids & {term.id, editor.id}:
            break
        await asyncio.sleep(0.05)
    assert not ids & {term.id, editor.id}
    with pytest.raises(NotFound):
        await focus(desktop, 1, term.id)


async def test_window_actions_through_act(desktop: AgentDesktop) -> None:
    launched = r.expect(await desktop.act(1, a.Launch(app="xterm")), r.FoundWindow)
    window = launched.window.id
    query = a.WindowQuery(class_="xterm", within_ms=5000)
    found = r.expect(await desktop.act(1, a.AwaitWindow(what=query)), r.FoundWindow)
    assert found.window.class_ == "XTerm"
    arranged = await desktop.act(
        1,
        a.OnWindow(
            window=window,
            what=a.WindowOp(do="arrange", how=Arrange(how="at", to=Point(x=50, y=60))),
        ),
    )
    assert isinstance(arranged, r.WindowChanged) and arranged.window is not None
    assert arranged.id == window and (arranged.window.x, arranged.window.y) == (50, 60)
    listed = r.expect(await desktop.act(1, a.Windows()), r.WindowList).windows
    info = next(w for w in listed if w.id == window)
    assert info == arranged.window
    # A window's capture is its rectangle of the screen.
    shot = await desktop.act(1, a.Capture(what=a.CaptureWhat(window=window, pointer=True)))
    assert isinstance(shot, r.Captured) and not shot.unchanged
    assert (shot.width, shot.height) == (info.width, info.height)
    assert shot.png_base64 and shot.hash.startswith("px:")
    closed = await desktop.act(1, a.OnWindow(window=window, what=a.WindowOp(do="close")))
    assert closed == r.WindowChanged(id=window, closed=True)
    gone = a.AwaitWindow(what=a.WindowQuery(class_="no-such-class", within_ms=200))
    with pytest.raises(Timeout):
        await desktop.act(1, gone)


async def test_chromium_from_the_catalog_opens_a_window_on_the_screen_profile(
    desktop: AgentDesktop,
) -> None:
    before = {w.id for w in await windows(desktop, 1)}
    window = await launch(desktop, 1, "chromium")
    assert window.class_ == "Chromium" and window.id not in before
    await close_window(desktop, 1, window.id)


async def test_apps_defined_by_the_spec_launch(desktop: AgentDesktop) -> None:
    names = await desktop.define_apps(
        {"clock": AppDefinition(command=["xterm", "-class", "HolmClock"], window_class="HolmClock")}
    )
    assert "clock" in names
    listed = r.expect(await desktop.act(1, a.Apps()), r.AppList).apps
    assert {"chromium", "xterm", "mousepad", "clock"} <= {app.name for app in listed}
    window = await launch(desktop, 1, "clock")
    assert window.class_ == "HolmClock"
    await close_window(desktop, 1, window.id)
    with pytest.raises(NotFound):
        await launch(desktop, 1, "no-such-app")


async def test_clipboard_round_trip_in_both_selections(desktop: AgentDesktop) -> None:
    await set_clipboard(desktop, 1, "from the clipboard ✓")
    await set_clipboard(desktop, 1, "from primary", "primary")
    assert await clipboard(desktop, 1) == "from the clipboard ✓"
    assert await clipboard(desktop, 1, "primary") == "from primary"
    # The length is of the UTF-8 text, as a trace records it.
    assert await desktop.act(1, a.Clipboard()) == r.ClipboardView(
        selection="clipboard",
        length=len("from the clipboard ✓".encode()),
        text="from the clipboard ✓",
    )


async def test_a_selection_owner_that_never_answers_times_out_and_the_clipboard_goes_on(
    desktop: AgentDesktop,
) -> None:
    # An X client of the box's own display takes the clipboard and answers no request: a get
    # fails with the documented timeout when its deadline passes (the clipboard's thread
    # sleeps until that deadline, with no tick to notice it), and the clipboard still works.
    from Xlib import X
    from Xlib.display import Display

    info = await desktop.ready(30)
    silent = Display(info.screens[1].display)
    try:
        window = silent.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        window.set_selection_owner(silent.intern_atom("CLIPBOARD"), X.CurrentTime)
        silent.sync()
        with pytest.raises(Timeout, match="did not answer"):
            await clipboard(desktop, 1)
    finally:
        silent.close()
    await set_clipboard(desktop, 1, "after the silent owner")
    assert await clipboard(desktop, 1) == "after the silent owner"


PASTE_PAGE = """<!doctype html><html><body style="margin:0">
<textarea id="t" autofocus style="position:fixed;left:0;top:0;width:100vw;height:100vh"></textarea>
<script>
const t = document.getElementById('t');
t.addEventListener('input', () => { document.title = 'value:' + t.value; });
</script></body></html>"""


async def test_chromium_pastes_what_was_set_and_copies_for_get(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    await desktop.act(0, a.OpenUrl(url=write_page(agent, "paste.html", PASTE_PAGE)))
    await desktop.act(0, a.Click(at=Point(x=640, y=500)))
    await set_clipboard(desktop, 0, "pasted ünïcode")
    await desktop.act(0, a.Press(chord=["ctrl+v"]))
    assert await page_title(desktop, 0, "value:pasted ünïcode") == "value:pasted ünïcode"
    # The other way: Chromium owns the clipboard after a copy, and get asks it.
    await desktop.act(0, a.Press(chord=["ctrl+a"], then=["BackSpace"]))
    await desktop.act(0, a.Type(text="copied by chromium"))
    await desktop.act(0, a.Press(chord=["ctrl+a"], then=["ctrl+c"]))
    text = ""
    for _ in range(50):
        text = await clipboard(desktop, 0)
        if text == "copied by chromium":
            break
        await asyncio.sleep(0.05)
    assert text == "copied by chromium"
    # Selecting in Chromium set the primary selection, which is Chromium's now.
    assert await clipboard(desktop, 0, "primary") == "copied by chromium"


async def test_open_url_in_a_blank_tab(desktop: AgentDesktop, agent: RunningAgent) -> None:
    url = write_page(agent, "titled.html", "<title>second tab</title>")
    opened = r.expect(await desktop.act(1, a.OpenUrl(url=url, target="blank")), r.PageOpened)
    assert opened.url == url and opened.loaded
    listed = {t.tab: t for t in await tabs(desktop, 1)}
    assert listed[opened.tab].url == url
    closed = await desktop.act(1, a.OnTab(tab=opened.tab, close=True))
    assert closed == r.TabDone(tab=opened.tab, closed=True)
    for _ in range(50):
        listed = {t.tab: t for t in await tabs(desktop, 1)}
        if opened.tab not in listed:
            break
        await asyncio.sleep(0.05)
    assert opened.tab not in listed


async def test_a_large_copy_can_be_read(desktop: AgentDesktop, agent: RunningAgent) -> None:
    # Half a megabyte: more than one X request holds (Chromium may hand it over in INCR
    # chunks).
    page = PASTE_PAGE.replace(
        "</script>", "t.value = 'holm '.repeat(100000); document.title = 'filled';</script>"
    )
    await desktop.act(0, a.OpenUrl(url=write_page(agent, "large.html", page)))
    await desktop.act(0, a.Click(at=Point(x=640, y=500)))
    await desktop.act(0, a.Press(chord=["ctrl+a"], then=["ctrl+c"]))
    text = ""
    for _ in range(50):
        text = await clipboard(desktop, 0)
        if len(text) == 500_000:
            break
        await asyncio.sleep(0.1)
    assert text == "holm " * 100_000


async def test_the_window_list_follows_what_programs_and_the_window_manager_change(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    # The list is kept from X events: each change below is made by someone else than the
    # listing (a page's script, xterm itself, the window manager) and must show at once.
    await windows(desktop, 1)
    page = write_page(agent, "titled.html", "<title>first</title>")
    await desktop.act(1, a.OpenUrl(url=page))
    browser = next(w for w in await windows(desktop, 1) if w.class_ == "Chromium")
    assert browser.title.startswith("first")

    term = await launch(desktop, 1, "xterm", "-T", "before")
    listed = {w.id: w for w in await windows(desktop, 1)}
    assert listed[term.id].title == "before"
    # xterm sets its own title from an escape sequence its shell prints.
    await focus(desktop, 1, term.id)
    await desktop.act(1, a.Type(text="printf '\\033]2;after\\007'\n"))
    for _ in range(100):
        if {w.id: w for w in await windows(desktop, 1)}[term.id].title == "after":
            break
        await asyncio.sleep(0.05)
    assert {w.id: w for w in await windows(desktop, 1)}[term.id].title == "after"

    # The window manager moves the frame; the list shows the client where it went.
    await arrange(desktop, 1, term.id, Arrange(how="at", to=Point(x=120, y=140)))
    moved = {w.id: w for w in await windows(desktop, 1)}[term.id]
    assert (moved.x, moved.y) == (120, 140)
    await arrange(desktop, 1, term.id, Arrange(how="minimise"))
    assert {w.id: w for w in await windows(desktop, 1)}[term.id].minimised

    await close_window(desktop, 1, term.id)
    for _ in range(100):
        if term.id not in {w.id for w in await windows(desktop, 1)}:
            break
        await asyncio.sleep(0.05)
    assert term.id not in {w.id for w in await windows(desktop, 1)}
