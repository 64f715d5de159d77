"""Key names as X and the computer-use formats of models name them, each pressed on a real
Chromium page and read back as the page's `keydown` saw it (`key`, `code`, modifiers), and
text typed whatever Caps Lock and the keys held before it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from key_kit import KEYS_PAGE, TABLE

from holm.adapters.agent_desktop import AgentDesktop
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.values import Point

from .conftest import RunningAgent, page_origin, page_title


async def _page(desktop: AgentDesktop, agent: RunningAgent) -> tuple[int, int]:
    return await page_origin(desktop, agent, "keys.html", KEYS_PAGE)


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
