"""Keyboard and pointer input through XTEST, read back from Chromium pages and xterm."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from desktop_kit import arrange, close_window, cursor, focus, launch

from holm.adapters.agent_desktop import AgentDesktop
from holm.agent.browser.tab_watch import TabWatch
from holm.agent.motion import plan
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.values import Button, Point

from .conftest import RunningAgent, page_origin, page_title, write_page

# Where a page took a press, and with which button (tab_watch.py).
Landing = tuple[int, int, int]

INPUT_PAGE = """<!doctype html><html><body style="margin:0">
<input id="box" style="position:fixed;left:200px;top:200px;width:600px;height:40px;font-size:20px">
<script>
const box = document.getElementById('box');
box.addEventListener('input', () => { document.title = 'value:' + box.value; });
document.addEventListener('keydown', e => {
  if (e.ctrlKey && e.key === 'b') document.title = 'chord:ctrl+b';
});
document.addEventListener('dblclick', e => { document.title = 'dblclick:' + e.screenX; });
// The directions the wheel went, in the order first seen: a scroll's late events (Chromium
// may deliver one after the next scroll's, or one of no delta) change nothing of them.
const went = [];
document.addEventListener('wheel', e => {
  const way = e.deltaY > 0 ? 'down' : e.deltaY < 0 ? 'up' : null;
  if (way && !went.includes(way)) went.push(way);
  if (went.length) document.title = 'wheel:' + went.join(',');
});
</script></body></html>"""


async def _open_input_page(desktop: AgentDesktop, agent: RunningAgent) -> None:
    """Open the page and click into its input. The page sits below Chromium's toolbar: a
    first click tells where the page's (0, 0) is on the screen."""
    html = INPUT_PAGE.replace(
        "<script>",
        "<script>\ndocument.addEventListener('mousedown', e => {document.title = "
        "'at:' + (e.screenX - e.clientX) + ',' + (e.screenY - e.clientY)}, {once: true});\n",
    )
    left, top = await page_origin(desktop, agent, "input.html", html)
    await desktop.act(0, a.Click(at=Point(x=left + 500, y=top + 220)))


async def test_typed_text_arrives_in_a_chromium_input(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    await _open_input_page(desktop, agent)
    text = "Hello, wörld! ✓ 日本 😀 #1"
    assert await desktop.act(0, a.Type(text=text)) == r.Typed(typed=len(text))
    assert await page_title(desktop, 0, f"value:{text}") == f"value:{text}"
    pressed = await desktop.act(0, a.Press(chord=["ctrl+a"], then=["BackSpace"]))
    # The keys as normalized (holm/wire/keys.py): the chord's keys, aliases in lower case.
    assert pressed == r.Pressed(pressed=["ctrl", "a", "backspace"])
    assert await page_title(desktop, 0, "value:") == "value:"
    await desktop.act(0, a.Type(text="slow", delay_ms=20))
    assert await page_title(desktop, 0, "value:slow") == "value:slow"
    await desktop.act(0, a.Press(chord=["ctrl", "b"]))
    assert await page_title(desktop, 0, "chord:ctrl+b") == "chord:ctrl+b"


TWO_INPUTS = """<!doctype html><html><body style="margin:0">
<input id="a" style="position:fixed;left:100px;top:200px;width:300px;height:40px">
<input id="b" style="position:fixed;left:600px;top:200px;width:300px;height:40px">
<script>
window.keys = [];
document.addEventListener('keydown', e => window.keys.push(document.activeElement.id + e.key));
document.addEventListener('mousedown', e => {
  document.title = 'at:' + (e.screenX - e.clientX) + ',' + (e.screenY - e.clientY)}, {once: true});
</script></body></html>"""


async def _page_origin(desktop: AgentDesktop, agent: RunningAgent, html: str) -> tuple[int, int]:
    """Open `html` and tell where its (0, 0) is on the screen (a first click, far from its
    inputs, gives it)."""
    return await page_origin(desktop, agent, "two-inputs.html", html)


async def test_keys_typed_right_after_a_click_go_to_the_field_it_focused(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    left, top = await _page_origin(desktop, agent, TWO_INPUTS)
    # Each click moves the focus to the other input; the key comes right after it. Without
    # a wait for the click to land, Chromium gave about one key in five to the input that
    # had the focus before (docs/agent.md, Input).
    for n in range(40):
        field = "ab"[n % 2]
        x = left + (250 if field == "a" else 750)
        await desktop.act(0, a.Click(at=Point(x=x, y=top + 220)))
        await desktop.act(0, a.Type(text=field))
    got = await desktop.act(0, a.Evaluate(what=a.EvaluateWhat(expression="window.keys")))
    assert isinstance(got, r.Evaluated)
    assert got.value == ["aa", "bb"] * 20


async def test_keys_right_after_a_click_from_another_window_go_to_the_page(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    # The window manager moves the X focus to Chromium on the click; the page takes the
    # click after that, so keys sent once it did go to the page, not to the xterm.
    left, top = await _page_origin(desktop, agent, TWO_INPUTS)
    term = await launch(desktop, 0, "xterm")
    try:
        await arrange(desktop, 0, term.id, a.Arrange(how="at", to=Point(x=900, y=500)))
        for _ in range(15):
            await focus(desktop, 0, term.id)
            await desktop.act(0, a.Click(at=Point(x=left + 250, y=top + 220)))
            await desktop.act(0, a.Type(text="x"))
        got = await desktop.act(0, a.Evaluate(what=a.EvaluateWhat(expression="window.keys")))
        assert isinstance(got, r.Evaluated)
        assert got.value == ["ax"] * 15
    finally:
        await close_window(desktop, 0, term.id)


@contextlib.asynccontextmanager
async def _watching(desktop: AgentDesktop) -> AsyncIterator[tuple[TabWatch, list[Landing]]]:
    """A tab watch of the test's own on screen 0's Chromium, live, and what it is told of
    clicks that landed."""
    port = (await desktop.info()).screens[0].devtools_port
    assert port is not None
    landed: list[Landing] = []
    watch = TabWatch(lambda x, y, button: landed.append((x, y, button)))
    watching = asyncio.create_task(watch.watch(port))
    try:
        for _ in range(100):
            if watch.live:
                break
            await asyncio.sleep(0.05)
        yield watch, landed
    finally:
        watching.cancel()


async def _told(landed: list[Landing], landing: Landing) -> bool:
    """Whether the watch is told of `landing` within 2 s."""
    for _ in range(100):
        if landing in landed:
            return True
        await asyncio.sleep(0.02)
    return False


async def test_the_page_tells_where_a_click_landed(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    async def lands(x: int, y: int, button: Button = "left") -> bool:
        await desktop.act(0, a.Click(at=Point(x=x, y=y), button=button))
        return await _told(landed, (x, y, {"left": 0, "middle": 1, "right": 2}[button]))

    # No context menu after the right click: one that showed late (under load) would stay
    # open over the next page, and take that page's first click.
    no_menu = TWO_INPUTS.replace(
        "<script>", "<script>document.addEventListener('contextmenu', e => e.preventDefault());"
    )
    async with _watching(desktop) as (_, landed):
        left, top = await _page_origin(desktop, agent, no_menu)
        assert await lands(left + 250, top + 300)
        assert await lands(left + 260, top + 300, "right")
        # A new document of the same tab: its listener is put in before its own scripts.
        left, top = await _page_origin(desktop, agent, no_menu.replace("<body", "<body id=2"))
        assert await lands(left + 270, top + 300)
        # Chromium's toolbar is no page: nothing tells that click.
        assert not await lands(left + 400, top // 2)


async def test_the_page_tells_each_key_and_release_it_took(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    port = (await desktop.info()).screens[0].devtools_port
    assert port is not None
    keys: list[None] = []
    released: list[Landing] = []
    watch = TabWatch(
        on_key_landed=lambda: keys.append(None),
        on_released=lambda x, y, button: released.append((x, y, button)),
    )
    watching = asyncio.create_task(watch.watch(port))
    try:
        await _open_input_page(desktop, agent)
        for _ in range(100):
            if watch.live:
                break
            await asyncio.sleep(0.05)
        # Once each, though the agent's own watch listens in the same world.
        counts = []
        for step in [a.Type(text="a"), a.Type(text="b"), a.Press(then=["Return"])]:
            await desktop.act(0, step)
            await asyncio.sleep(0.5)
            counts.append(len(keys))
        assert counts == [1, 2, 3]
        # A key a page makes itself is not told.
        await desktop.act(
            0,
            a.Evaluate(
                what=a.EvaluateWhat(expression="dispatchEvent(new KeyboardEvent('keydown'))")
            ),
        )
        await asyncio.sleep(0.3)
        assert len(keys) == 3
        # The click of _open_input_page came up on the page: told where, and which button.
        assert await _told(released, released[-1] if released else (-1, -1, -1))
        left_up = released[-1]
        await desktop.act(0, a.Click(at=Point(x=left_up[0] + 10, y=left_up[1])))
        assert await _told(released, (left_up[0] + 10, left_up[1], 0))
    finally:
        watching.cancel()


async def test_a_page_cannot_tell_a_landing_of_its_own_making(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    # A page that fakes pointerdowns at (7, 7), and calls the binding wherever it finds it,
    # would let keys go before a real click there had landed.
    faker = TWO_INPUTS.replace(
        "<script>",
        "<script>\nsetInterval(() => {\n"
        "  dispatchEvent(new PointerEvent('pointerdown', {screenX: 7, screenY: 7, button: 0,"
        " bubbles: true}));\n"
        "  if (typeof __holmLanded === 'function') __holmLanded('7,7,0');\n"
        "}, 10);\n",
    )
    async with _watching(desktop) as (_, landed):
        left, top = await _page_origin(desktop, agent, faker)
        await desktop.act(0, a.Click(at=Point(x=left + 250, y=top + 300)))
        # The real click is told; nothing the page made is, in half a second more.
        assert await _told(landed, (left + 250, top + 300, 0))
        await asyncio.sleep(0.5)
        assert (7, 7, 0) not in landed


async def test_the_watch_hears_no_console_message_of_a_page(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    # With DevTools' Runtime domain on, each of these 2,000 lines would come to the watch.
    async with _watching(desktop) as (watch, _):
        chatty = "<script>for (let i = 0; i < 2000; i++) console.log('line', i);</script>"
        await desktop.act(0, a.OpenUrl(url=write_page(agent, "chatty.html", chatty)))
        await asyncio.sleep(1)
        assert watch.live
        assert watch.messages < 200


async def test_double_click_and_scroll_reach_the_page(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    await _open_input_page(desktop, agent)
    # A double click is two clicks within the double-click time (500 ms); on a machine that
    # stalls the agent for that long between them it is two single clicks, so up to three
    # tries (a double click that never works fails all three).
    for x in (1000, 1010, 1020):
        await desktop.act(0, a.DoubleClick(at=Point(x=x, y=600)))
        if await page_title(desktop, 0, f"dblclick:{x}") == f"dblclick:{x}":
            break
    else:
        pytest.fail("no double click reached the page")
    await desktop.act(0, a.Scroll(at=Point(x=1000, y=600), dy=2))
    assert await page_title(desktop, 0, "wheel:down") == "wheel:down"
    await desktop.act(0, a.Scroll(dy=-1))
    assert await page_title(desktop, 0, "wheel:down,up") == "wheel:down,up"


async def test_typed_text_runs_in_an_xterm(desktop: AgentDesktop, agent: RunningAgent) -> None:
    window = await launch(desktop, 1, "xterm")
    assert window.class_ == "XTerm"
    target = agent.home / "x"
    target.unlink(missing_ok=True)
    await focus(desktop, 1, window.id)
    await desktop.act(1, a.Type(text="echo hi > ~/x"))
    await desktop.act(1, a.Press(chord=["Return"]))
    for _ in range(100):
        if target.exists() and target.read_text() == "hi\n":
            break
        await asyncio.sleep(0.05)
    assert target.read_text() == "hi\n"
    await close_window(desktop, 1, window.id)


HOLD_PAGE = """<!doctype html><html><body style="margin:0;height:100vh"><script>
let log = [];
for (const t of ['mousedown', 'mouseup']) document.addEventListener(t, () => {
  log.push(t); document.title = log.join(',');
});
</script></body></html>"""


async def test_mouse_down_is_released_after_hold_ms(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    await desktop.act(0, a.OpenUrl(url=write_page(agent, "hold.html", HOLD_PAGE)))
    down = r.expect(
        await desktop.act(0, a.MouseDown(at=Point(x=600, y=500), hold_ms=300)), r.ButtonHeld
    )
    assert down.at == Point(x=600, y=500) and down.seed is None and down.release_at_ms > 0
    ended = await desktop.end_batch(0)
    released, held = ended.released, ended.held
    assert released.buttons == [] and held.buttons == ["left"]
    assert held.release_at_ms == down.release_at_ms
    # Nobody sends mouse_up: the page sees the button go up when the hold runs out.
    assert await page_title(desktop, 0, "mousedown,mouseup") == "mousedown,mouseup"
    held = (await desktop.end_batch(0)).held
    assert held.buttons == []


async def test_end_batch_releases_what_has_no_hold_ms(desktop: AgentDesktop) -> None:
    await desktop.act(1, a.MouseDown(at=Point(x=60, y=60), button="middle"))
    await desktop.act(1, a.KeyDown(key="shift"))
    ctrl = r.expect(await desktop.act(1, a.KeyDown(key="ctrl", hold_ms=60_000)), r.KeyHeld)
    assert ctrl.key == "ctrl"
    ended = await desktop.end_batch(1)
    released, held = ended.released, ended.held
    assert released.buttons == ["middle"] and released.keys == ["shift"]
    assert held.keys == ["ctrl"] and held.release_at_ms == ctrl.release_at_ms
    assert await desktop.act(1, a.KeyUp(key="ctrl")) == r.KeyReleased(key="ctrl")
    ended = await desktop.end_batch(1)
    released, held = ended.released, ended.held
    assert (released.keys, held.keys) == ([], [])


def test_human_motion_with_the_same_seed_gives_the_same_points() -> None:
    first = plan((10, 10), (900, 600), "human", 42, (1280, 800))
    again = plan((10, 10), (900, 600), "human", 42, (1280, 800))
    other = plan((10, 10), (900, 600), "human", 43, (1280, 800))
    assert first == again
    assert first != other
    assert (first[-1].x, first[-1].y) == (900, 600)
    # Not a straight line: some point strays from the segment between the ends.
    assert any(abs((p.y - 10) * 890 - (p.x - 10) * 590) / 1068 > 3 for p in first)


async def test_human_motion_is_replayable_through_its_seed(desktop: AgentDesktop) -> None:
    result = r.expect(
        await desktop.act(1, a.Move(to=Point(x=700, y=300), motion="human")), r.Pointed
    )
    assert result.at == Point(x=700, y=300) and isinstance(result.seed, int)
    assert await cursor(desktop, 1) == Point(x=700, y=300)
    # A move given that seed answers it back, as the first did: a fork replays it so.
    await desktop.act(1, a.Move(to=Point(x=10, y=10)))
    again = a.Move(to=Point(x=700, y=300), motion="human", seed=result.seed)
    assert await desktop.act(1, again) == result
    assert await cursor(desktop, 1) == Point(x=700, y=300)


def test_key_names() -> None:
    from Xlib import XK

    from holm.agent.x11.keys import chord_keysyms
    from holm.errors import BadRequest

    def sym(name: str) -> int:
        return int(XK.string_to_keysym(name))

    assert chord_keysyms("ctrl+l") == [sym("Control_L"), ord("l")]
    assert chord_keysyms("CTRL+Shift+T") == [sym("Control_L"), sym("Shift_L"), ord("T")]
    assert chord_keysyms("F5") == chord_keysyms("f5") == [sym("F5")]
    assert chord_keysyms("enter") == chord_keysyms("Return") == [sym("Return")]
    assert chord_keysyms("pgdn") == [sym("Next")]
    assert chord_keysyms("KP_Enter") == [sym("KP_Enter")]
    assert chord_keysyms("ctrl++") == [sym("Control_L"), ord("+")]
    assert chord_keysyms("+") == [ord("+")]
    assert chord_keysyms("é") == [0xE9]
    assert chord_keysyms("✓") == [0x01000000 + ord("✓")]
    with pytest.raises(BadRequest):
        chord_keysyms("no-such-key")


DRAG_PAGE = """<!doctype html><html><body style="margin:0;height:100vh"><script>
let down = null, moves = 0;
document.addEventListener('contextmenu', e => e.preventDefault());
document.addEventListener('mousedown', e => { down = [e.screenX, e.screenY]; moves = 0; });
document.addEventListener('mousemove', e => { if (down) moves++; });
document.addEventListener('mouseup', e => {
  document.title = 'drag:' + down + '->' + e.screenX + ',' + e.screenY + ':' + (moves > 0)
    + ':' + (e.shiftKey ? 'shift' : '');
  down = null;
});
</script></body></html>"""


async def test_drag_and_path_press_move_and_release_with_modifiers(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    await desktop.act(0, a.OpenUrl(url=write_page(agent, "drag.html", DRAG_PAGE)))
    dragged = await desktop.act(
        0, a.Drag(from_=Point(x=300, y=300), to=Point(x=700, y=500), motion="smooth")
    )
    assert dragged == r.Pointed(at=Point(x=700, y=500))
    assert await page_title(desktop, 0, "drag:300,300->700,500:true:") == (
        "drag:300,300->700,500:true:"
    )
    through = [Point(x=200, y=600), Point(x=400, y=650), Point(x=600, y=600)]
    traced = await desktop.act(0, a.Path(through=through, held=["shift"], motion="human", seed=3))
    assert traced == r.Pointed(at=Point(x=600, y=600), seed=3)
    assert await page_title(desktop, 0, "drag:200,600->600,600:true:shift") == (
        "drag:200,600->600,600:true:shift"
    )
    ended = await desktop.end_batch(0)
    released, held = ended.released, ended.held
    assert (released.buttons, released.keys, held.buttons, held.keys) == ([], [], [], [])
