"""Where a screen's X work runs (lane.py): input on the agent's loop when it cannot sleep and
the input thread is idle, else on that thread, one call after another; a still screen's hash
on the loop, tiles to read on the capture thread. On a `Screen` of this process over a real
Xvfb (own_screen.py)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from Xlib.display import Display

from holm.agent.acts import _inline
from holm.agent.x11.input import Input
from holm.agent.x11.screen import Screen
from holm.wire.values import Point

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


@contextlib.contextmanager
def grabbed(painter: Display, seconds: float = 0.5) -> Iterator[threading.Event]:
    """The X server grabbed by the painter for `seconds`: meanwhile it does no other
    client's requests, so whatever waits for it waits for the grab to end (the event)."""
    painter.grab_server()
    painter.sync()
    ended = threading.Event()

    def ungrab() -> None:
        ended.set()
        painter.ungrab_server()
        painter.flush()

    timer = threading.Timer(seconds, ungrab)
    timer.start()
    try:
        yield ended
    finally:
        timer.join()


async def test_input_on_the_loop_answers_before_the_x_server_has_done_it(
    screen: Screen, painter: Display
) -> None:
    with grabbed(painter) as ended:
        await screen.on_input(click, _inline("instant"))
        # More input on the same connection needs no wait: the X server keeps its order.
        await screen.on_input(lambda i: i.move((120, 90), "instant", None, 0), _inline("instant"))
        answered_in_grab = not ended.is_set()
        # With nothing asking, the loop waits for the X server on its own a little later
        # (here until the grab ends, so this sleep ends after it).
        await asyncio.sleep(0.1)
        assert ended.is_set()
    assert answered_in_grab
    # A query sees the pointer where the input left it.
    assert await screen.cursor() == Point(120, 90)


async def test_a_call_on_the_thread_waits_for_the_x_server_first(
    screen: Screen, painter: Display
) -> None:
    with grabbed(painter) as ended:
        await screen.on_input(click, _inline("instant"))
        # No turn of the loop since: the click's wait is still owed when the thread's call
        # comes, and is waited before it runs, so the two never use the connection at once.
        began: list[tuple[str, bool]] = []
        await screen.on_input(
            lambda i: began.append((threading.current_thread().name, ended.is_set()))
        )
    [(name, after_the_grab)] = began
    assert name.startswith("input-0") and after_the_grab


async def test_input_on_the_loop_reaches_the_x_server_with_nothing_after_it(
    screen: Screen, painter: Display, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its requests go out at the loop's next turn, after the answer: not only when more
    input, a query or the owed wait (held off here) comes."""
    monkeypatch.setattr("holm.agent.x11.screen.SETTLE_S", 600.0)
    await screen.on_input(lambda i: i.move((130, 70), "instant", None, 0), _inline("instant"))
    root = painter.screen().root
    for _ in range(100):
        await asyncio.sleep(0.01)
        pointer = root.query_pointer()
        if (pointer.root_x, pointer.root_y) == (130, 70):
            return
    raise AssertionError("the move never reached the X server")
