"""Keys typed right after a click wait until a page took the click (input.py's
`pointer_landed`, which tab_watch.py calls for the screen's Chromium), or until the click is
KEYS_AFTER_BUTTON_S old when no page tells, as after a click on Chromium's own toolbar; and a
press right after keys waits until a page took the keys (`key_landed`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from Xlib.display import Display

from holm.agent.browser.tab_watch import _landing
from holm.agent.x11 import input as input_module
from holm.agent.x11.input import Input

from .own_screen import HEIGHT, WIDTH, display

__all__ = ["display"]  # fixtures


def _held_until(act: Callable[[], None], word: Callable[[], None], held_s: float = 0.2) -> bool:
    """Whether `act`, run on a thread of its own, was still waiting `held_s` later, and
    went (within 30 s) once `word` was given: a page's word, on another thread, as the
    agent's loop gives it."""
    done = threading.Event()

    def run() -> None:
        act()
        done.set()

    acting = threading.Thread(target=run, daemon=True)
    acting.start()
    if done.wait(held_s):
        return False
    word()
    went = done.wait(30)
    acting.join(30)
    return went


@pytest.fixture
def keyboard(display: str) -> Iterator[Input]:
    conn = Display(display)
    yield Input(conn, WIDTH, HEIGHT)
    conn.close()


def test_keys_wait_for_the_last_click_until_a_page_took_that_one(keyboard: Input) -> None:
    assert keyboard.keys_ready()  # no click yet
    keyboard.click((100, 50), "left", [], "instant", None)
    assert keyboard.keys_wait_s() > 0
    # Another place, another button: not this click.
    keyboard.pointer_landed(101, 50, 0)
    keyboard.pointer_landed(100, 50, 2)
    assert not keyboard.keys_ready()
    keyboard.pointer_landed(100, 50, 0)
    assert keyboard.keys_wait_s() == 0
    # The next click waits again, at the same place too; a page numbers the right button 2.
    keyboard.click((100, 50), "left", [], "instant", None)
    assert not keyboard.keys_ready()
    keyboard.click((200, 60), "right", [], "instant", None)
    keyboard.pointer_landed(100, 50, 0)
    assert not keyboard.keys_ready()
    keyboard.pointer_landed(200, 60, 2)
    assert keyboard.keys_ready()


def test_a_scroll_after_a_click_a_page_took_makes_no_key_wait(keyboard: Input) -> None:
    keyboard.click((300, 200), "left", [], "instant", None)
    keyboard.pointer_landed(300, 200, 0)
    # The wheel's notches are buttons 4 to 7 to X; they move no focus.
    keyboard.scroll((320, 220), 0, 3)
    assert keyboard.keys_ready()


def test_keys_waiting_for_a_click_go_as_soon_as_a_page_took_it(
    keyboard: Input, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without a page's word, these keys would wait ten minutes.
    monkeypatch.setattr(input_module, "KEYS_AFTER_BUTTON_S", 600.0)
    keyboard.click((100, 50), "left", [], "instant", None)
    assert _held_until(
        lambda: keyboard.type_text("ab", 0), lambda: keyboard.pointer_landed(100, 50, 0)
    )


@given(st.text())
def test_whatever_a_page_calls_the_binding_with_is_a_landing_or_nothing(payload: str) -> None:
    # Whatever the binding is called with, the watch goes on.
    landing = _landing(payload)
    assert landing is None or [int(part) for part in payload.split(",")] == list(landing)


def test_a_landing_is_where_and_with_which_button() -> None:
    assert _landing("640,-3,2") == (640, -3, 2)
    for wrong in ("--5,1,0", "1,2", "1,2,0,3", "1,2,10", "x,1,0", "1,2,٣"):
        assert _landing(wrong) is None


# The other way round: a press right after keys waits until a page told of as many keys
# as went down (`key_landed`), or until the last key is BUTTON_AFTER_KEYS_S old.


def test_a_press_waits_for_the_keys_before_it_until_a_page_took_them_all(
    keyboard: Input,
) -> None:
    assert keyboard.buttons_ready()  # no key yet
    keyboard.type_text("ab", 0)
    assert keyboard.buttons_wait_s() > 0
    keyboard.key_landed()
    assert not keyboard.buttons_ready()  # one of two
    keyboard.key_landed()
    assert keyboard.buttons_wait_s() == 0
    # A click's own modifier is carried in the press's state: nothing to wait for.
    keyboard.click((100, 50), "left", ["shift"], "instant", None)
    assert keyboard.buttons_ready()


def test_keys_no_page_told_of_are_taken_as_told_once_a_press_waited_for_them(
    keyboard: Input, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(input_module, "BUTTON_AFTER_KEYS_S", 0.05)
    keyboard.type_text("xyz", 0)  # to the address bar, say: no page tells
    assert not keyboard.buttons_ready()
    keyboard.click((100, 50), "left", [], "instant", None)
    # The click waited them out; a page's late word of them changes nothing after.
    assert keyboard.buttons_ready()
    keyboard.key_landed()
    keyboard.type_text("q", 0)
    # That late word gave no credit to this key.
    assert not keyboard.buttons_ready()
    keyboard.key_landed()
    assert keyboard.buttons_ready()


def test_a_press_after_keys_a_page_told_of_waits_longer_for_the_rest(
    keyboard: Input, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The keys go to a page (it told of one), which is late with the other: the press
    # waits past BUTTON_AFTER_KEYS_S for it, up to BUTTON_AFTER_PAGE_KEYS_S.
    monkeypatch.setattr(input_module, "BUTTON_AFTER_KEYS_S", 0.05)
    monkeypatch.setattr(input_module, "BUTTON_AFTER_PAGE_KEYS_S", 600.0)
    keyboard.type_text("ab", 0)
    keyboard.key_landed()
    assert _held_until(
        lambda: keyboard.click((100, 50), "left", [], "instant", None),
        keyboard.key_landed,
        held_s=0.3,
    )
    # After that press, keys no page tells of wait the short while again.
    keyboard.type_text("xyz", 0)
    assert 0 < keyboard.buttons_wait_s() <= 0.05


def test_a_press_waiting_for_keys_goes_as_soon_as_a_page_took_them(
    keyboard: Input, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without a page's word, this click would wait ten minutes.
    monkeypatch.setattr(input_module, "BUTTON_AFTER_KEYS_S", 600.0)
    keyboard.type_text("a", 0)
    assert _held_until(
        lambda: keyboard.click((100, 50), "left", [], "instant", None),
        keyboard.key_landed,
    )


# And a wheel right after a click waits until a page took the click's release
# (`pointer_released`), or until it is WHEEL_AFTER_RELEASE_S old.


def test_a_wheel_waits_for_the_last_release_until_a_page_took_that_one(keyboard: Input) -> None:
    assert keyboard.wheel_ready()  # no click yet
    keyboard.click((100, 50), "left", [], "instant", None)
    assert keyboard.wheel_wait_s() > 0
    keyboard.pointer_released(101, 50, 0)  # another place
    keyboard.pointer_released(100, 50, 2)  # another button
    assert not keyboard.wheel_ready()
    keyboard.pointer_released(100, 50, 0)
    assert keyboard.wheel_ready()


def test_a_wheel_waiting_for_a_release_turns_as_soon_as_a_page_took_it(
    keyboard: Input, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(input_module, "WHEEL_AFTER_RELEASE_S", 600.0)
    keyboard.click((100, 50), "left", [], "instant", None)
    assert _held_until(
        lambda: keyboard.scroll((100, 50), 0, 2), lambda: keyboard.pointer_released(100, 50, 0)
    )
    # A release no page tells of is waited out once.
    monkeypatch.setattr(input_module, "WHEEL_AFTER_RELEASE_S", 0.05)
    keyboard.click((300, 60), "left", [], "instant", None)
    keyboard.scroll((300, 60), 0, 1)
    assert keyboard.wheel_ready()
