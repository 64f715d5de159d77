"""Key names as X and the computer-use formats of models name them, each pressed on a real
Chromium page and read back as the page's `keydown` saw it (`key`, `code`, modifiers), and
text typed whatever Caps Lock and the keys held before it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from holm.adapters.agent_desktop import AgentDesktop
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.values import Point

from .conftest import RunningAgent, page_title, write_page

# Every keydown is kept and its default prevented, so no key moves the focus or reaches
# the browser's own shortcuts (ctrl+l, Tab) while the table is pressed.
KEYS_PAGE = """<!doctype html><html><body style="margin:0">
<input id="box" style="position:fixed;left:100px;top:100px;width:600px;height:40px">
<script>
window.keys = [];
window.quiet = false;
document.addEventListener('keydown', e => {
  window.keys.push([e.key, e.code, (e.shiftKey ? 'S' : '') + (e.ctrlKey ? 'C' : '') +
    (e.altKey ? 'A' : '') + (e.metaKey ? 'M' : '')]);
  if (!window.quiet) e.preventDefault();
}, true);
document.addEventListener('mousedown', e => {
  document.title = 'at:' + (e.screenX - e.clientX) + ',' + (e.screenY - e.clientY)}, {once: true});
document.getElementById('box').addEventListener('input', e => {
  document.title = 'value:' + e.target.value; });
</script></body></html>"""

# A name → the last keydown of its press: key, code, modifiers (S shift, C ctrl, A alt, M meta).
# As on any X server, a modifier's own keydown does not carry its flag (X tells the state
# before the key).
TABLE: list[tuple[str, tuple[str, str, str]]] = [
    ("meta", ("Meta", "MetaLeft", "")),
    ("super", ("Meta", "MetaLeft", "")),
    ("cmd", ("Meta", "MetaLeft", "")),
    ("win", ("Meta", "MetaLeft", "")),
    ("ArrowLeft", ("ArrowLeft", "ArrowLeft", "")),
    ("arrowright", ("ArrowRight", "ArrowRight", "")),
    ("ArrowUp", ("ArrowUp", "ArrowUp", "")),
    ("Down", ("ArrowDown", "ArrowDown", "")),
    ("PageDown", ("PageDown", "PageDown", "")),
    ("Page_Up", ("PageUp", "PageUp", "")),
    ("Enter", ("Enter", "Enter", "")),
    ("Return", ("Enter", "Enter", "")),
    ("KP_Enter", ("Enter", "NumpadEnter", "")),
    ("KP_1", ("1", "Numpad1", "")),
    ("KP_0", ("0", "Numpad0", "")),
    ("KP_Home", ("Home", "Numpad7", "")),
    ("Escape", ("Escape", "Escape", "")),
    ("ESC", ("Escape", "Escape", "")),
    ("Backspace", ("Backspace", "Backspace", "")),
    ("BackSpace", ("Backspace", "Backspace", "")),
    ("Tab", ("Tab", "Tab", "")),
    ("Space", (" ", "Space", "")),
    ("Delete", ("Delete", "Delete", "")),
    ("Home", ("Home", "Home", "")),
    ("End", ("End", "End", "")),
    ("F2", ("F2", "F2", "")),
    ("f9", ("F9", "F9", "")),
    ("ctrl+shift+s", ("S", "KeyS", "SC")),
    ("CTRL+L", ("l", "KeyL", "C")),
    ("alt+x", ("x", "KeyX", "A")),
    ("shift+Tab", ("Tab", "Tab", "S")),
    ("super+a", ("a", "KeyA", "M")),
    ("a", ("a", "KeyA", "")),
    ("A", ("A", "KeyA", "S")),
]


async def _page(desktop: AgentDesktop, agent: RunningAgent) -> tuple[int, int]:
    await desktop.act(0, a.OpenUrl(url=write_page(agent, "keys.html", KEYS_PAGE)))
    await desktop.act(0, a.Click(at=Point(x=1100, y=700)))
    left, top = map(int, (await page_title(desktop, 0, "at:", prefix=True))[3:].split(","))
    return left, top


async def _evaluate(desktop: AgentDesktop, expression: str) -> Any:
    got = await desktop.act(0, a.Evaluate(what=a.EvaluateWhat(expression=expression)))
    assert isinstance(got, r.Evaluated)
    return got.value


async def last_keydown(desktop: AgentDesktop) -> list[str] | None:
    """The page's last keydown once its keydowns stopped coming (they reach the page a
    moment after the press answered); None when none came in 2 s."""
    keys: list[list[str]] = []
    for _ in range(40):
        await asyncio.sleep(0.05)
        now = await _evaluate(desktop, "window.keys")
        if now and now == keys:
            break
        keys = now
    return keys[-1] if keys else None


async def test_each_key_name_reaches_the_page_as_a_keyboard_would(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    await _page(desktop, agent)
    seen: dict[str, list[str] | None] = {}
    for name, _ in TABLE:
        await _evaluate(desktop, "window.keys = []")
        await desktop.act(0, a.Press(chord=name))
        seen[name] = await last_keydown(desktop)
    assert seen == {name: list(want) for name, want in TABLE}


@pytest.mark.parametrize("before", ["caps_lock", "held_shift", "held_ctrl"])
async def test_typed_text_is_the_text_whatever_was_pressed_before(
    desktop: AgentDesktop, agent: RunningAgent, before: str
) -> None:
    left, top = await _page(desktop, agent)
    await _evaluate(desktop, "window.quiet = true")
    await desktop.act(0, a.Click(at=Point(x=left + 300, y=top + 120)))
    if before == "caps_lock":
        await desktop.act(0, a.Press(chord="CapsLock"))
    else:
        await desktop.act(0, a.KeyDown(key=before.split("_")[1], hold_ms=5000))
    try:
        await desktop.act(0, a.Type(text="abc XYZ 1!"))
        assert await page_title(desktop, 0, "value:abc XYZ 1!") == "value:abc XYZ 1!"
        # Caps Lock is on again after the typing, and a held key is still down: a letter
        # pressed now is as they make it.
        await _evaluate(desktop, "window.keys = []")
        await desktop.act(0, a.Press(chord="q"))
        last = await last_keydown(desktop)
        want = {"caps_lock": ["Q", "KeyQ", ""], "held_shift": ["Q", "KeyQ", "S"]}
        assert last == want.get(before, ["q", "KeyQ", "C"])
    finally:
        if before == "caps_lock":
            await desktop.act(0, a.Press(chord="CapsLock"))
        else:
            await desktop.act(0, a.KeyUp(key=before.split("_")[1]))
