"""The agent's clipboard (`ClipboardOwner`) on a real Xvfb of its own, beside another X
client of that display."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest
from Xlib import X
from Xlib.display import Display

from holm.agent.x11.clipboard import ClipboardOwner
from holm.errors import Timeout

from .own_screen import display

__all__ = ["display"]  # fixtures


def test_a_get_after_another_program_took_the_selection_asks_that_program(display: str) -> None:
    owner = ClipboardOwner(display)
    other = Display(display)
    try:
        owner.set("clipboard", "ours")
        # The get must come to the clipboard's thread in the turn in which the other
        # program takes the selection, before the thread reads the SelectionClear: hold
        # the thread while the get is posted behind a piece of work that waits for it.
        held, taken = threading.Event(), threading.Event()
        holding: Future[None] = owner._post(lambda f: (held.wait(30), f.set_result(None)))
        waiting: Future[None] = owner._post(lambda f: (taken.wait(30), f.set_result(None)))
        getting: Future[str] = owner._post(lambda f: owner._start_get("clipboard", f))
        held.set()
        holding.result(30)
        window = other.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        window.set_selection_owner(other.intern_atom("CLIPBOARD"), X.CurrentTime)
        other.sync()
        taken.set()
        waiting.result(30)
        # The other program answers nothing: the get waits for it and times out, rather
        # than answering with the text that was ours.
        with pytest.raises(Timeout, match="did not answer"):
            getting.result(30)
    finally:
        other.close()
        owner.close()
