"""Where a screen's X work runs (lane.py): input on the agent's loop when it cannot sleep and
the input thread is idle, else on that thread, one call after another; a still screen's hash
on the loop, tiles to read on the capture thread. On a `Screen` of this process over a real
Xvfb (own_screen.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from Xlib.display import Display

from holm.adapters.agent.acts import _inline
from holm.adapters.agent.input import Input
from holm.adapters.agent.screen import Screen

from .own_screen import display, painter, screen, window

__all__ = ["display", "painter", "screen"]  # fixtures


def traced(
    work: Callable[[Input], object], log: list[tuple[str, float, float]]
) -> Callable[[Input], None]:
    """`work`, noting the thread it ran on and when it began and ended."""

    def run(i: Input) -> None:
        began = time.monotonic()
        work(i)
        log.append((threading.current_thread().name, began, time.monotonic()))

    return run


def click(i: Input) -> None:
    i.click((100, 100), "left", [], "instant", None)


async def test_a_click_that_jumps_runs_on_the_loop(screen: Screen) -> None:
    log: list[tuple[str, float, float]] = []
    await screen.on_input(traced(click, log), _inline("instant"))
    assert [name for name, _, _ in log] == [threading.current_thread().name]


async def test_what_can_sleep_runs_on_the_input_thread(screen: Screen) -> None:
    log: list[tuple[str, float, float]] = []
    human = traced(lambda i: i.click((200, 150), "left", [], "human", 7), log)
    await screen.on_input(human, _inline("human"))
    # Keys right after a click wait for it to land: typing now would sleep.
    typing = traced(lambda i: i.type_text("a", 0), log)
    await screen.on_input(typing, _inline(keys=True))
    assert [name.startswith("input-0") for name, _, _ in log] == [True, True]


async def test_a_quick_call_waits_for_the_thread_to_be_done(screen: Screen) -> None:
    log: list[tuple[str, float, float]] = []
    slow = asyncio.create_task(
        screen.on_input(traced(lambda i: i.type_text("abcd", 50), log), None)
    )
    await asyncio.sleep(0.05)
    await screen.on_input(traced(click, log), _inline("instant"))
    await slow
    (typed_on, _, typed_end), (clicked_on, click_began, _) = log
    # Never two calls on the connection at once: the click went behind the typing.
    assert typed_on == clicked_on and typed_on.startswith("input-0")
    assert click_began >= typed_end
    # Once the thread is idle again, the next quick call is back on the loop.
    await screen.on_input(traced(click, log), _inline("instant"))
    assert log[-1][0] == threading.current_thread().name


async def test_a_still_screen_is_answered_without_the_capture_thread(
    screen: Screen, painter: Display
) -> None:
    first, _, _ = await screen.frame_hash()
    handed = screen.capture_lane.handed
    again, _, _ = await screen.frame_hash()
    unchanged = await screen.frame(have=first)
    assert again == first and unchanged.unchanged
    assert screen.capture_lane.handed == handed

    window(painter, 5, 5, 20, 20, 0xFF0000)
    changed, _, _ = await screen.frame_hash()
    # Drawn on: its tiles are read on the thread, and the hash is new.
    assert changed != first
    assert screen.capture_lane.handed == handed + 1
