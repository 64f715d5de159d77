"""Pointer and keyboard input through XTEST, in process, on the screen's input connection.

An `Input` belongs to one screen: every method blocks, and no two calls run at once (the
screen runs them on its input thread, or on the agent's loop when they cannot sleep and
nothing is on that thread: `Screen.on_input`). Every action ends with `sync()`, so the X
server has done it before the next query on any connection (which then sees its effect).

On the agent's loop that wait is owed rather than waited (`deferring`), and the requests
are sent right after the answer (`send_unsent`, which `Screen.on_input` schedules before
anything else the loop does): a request written to the X server wakes it, and it often
takes the CPU from the agent there and then, to do the input and tell Chromium, so an
answer written after it waited for all of that. The X server does a connection's requests
in order, so later input on this connection needs no wait; a call on the thread or a query
on another connection pays it first (`settle()`, `Screen.on_input`), and the loop pays it
a little later when nothing asks. The wait was most of a click's answer on a busy screen
(bench/agent.py): with Chromium on it, the X server serves Chromium's answer to the click
before it answers the `sync`.
"""

from __future__ import annotations

import select
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence

import msgspec
from Xlib import XK, X
from Xlib.display import Display
from Xlib.error import ConnectionClosedError

from holm.agent.motion import MotionStep, plan
from holm.agent.x11 import keys
from holm.agent.x11.fake_input import FakeInput
from holm.errors import BadRequest
from holm.wire.values import Button, Modifier, Motion

BUTTONS: dict[str, int] = {"left": 1, "middle": 2, "right": 3, "back": 8, "forward": 9}
# X's buttons as a page numbers them (MouseEvent.button).
PAGE_BUTTONS: dict[int, int] = {1: 0, 2: 1, 3: 2, 8: 3, 9: 4}
SCROLL_UP, SCROLL_DOWN, SCROLL_LEFT, SCROLL_RIGHT = 4, 5, 6, 7
# The keysyms of the keypad keys that Num Lock switches (KP_Decimal, KP_0 … KP_9).
NUMPAD_KEYSYMS = range(0xFFAE, 0xFFBA)
MAX_TYPE_DELAY_MS = 1000
MAX_SCROLL_NOTCHES = 100
DOUBLE_CLICK_GAP_S = 0.03
KEYS_AFTER_BUTTON_S = 0.1
BUTTON_AFTER_KEYS_S = 0.1
# As long, when a page told of keys since the last press: they go to a page, which is
# late with the rest (CI, both cores busy: an Enter told after 100 ms, and the click on
# Send that followed reached the page first).
BUTTON_AFTER_PAGE_KEYS_S = 1.0
WHEEL_AFTER_RELEASE_S = 0.1
WHEEL_BUTTONS = frozenset({4, 5, 6, 7})
# The buttons a page gets a pointerdown for (X's 4 to 7 are the wheel's notches).
POINTER_BUTTONS = frozenset(BUTTONS.values())
# The modifier rows of X's modifier mapping (Shift, Lock, Control, Mod1 … Mod5).
LOCK_ROW = 1


class Down(msgspec.Struct):
    """A button or key left down: when it is released on its own, and whether a hold_ms
    asked for that (else the end of the batch releases it)."""

    token: int
    release_at_ms: int
    explicit: bool


class Input:
    def __init__(self, conn: Display, width: int, height: int) -> None:
        self.conn = conn
        self._events = FakeInput(conn)
        self.width = width
        self.height = height
        self.buttons: dict[str, Down] = {}
        self.keys: dict[str, Down] = {}
        self._tokens = 0
        self._start_landings((-1, -1))
        self._shift = self._keycode_plain(XK.string_to_keysym("Shift_L"))
        first = conn.display.info.min_keycode
        count = conn.display.info.max_keycode - first + 1
        mapping = conn.get_keyboard_mapping(first, count)
        self._per_keycode = len(mapping[0]) if mapping else 2
        # The keypad's keys whose second level Num Lock chooses, and the modifier bits and
        # keycodes of the keyboard (what `type` sets aside while it types).
        self._numpad = {
            int(first) + i
            for i, syms in enumerate(mapping)
            if len(syms) > 1 and syms[1] in NUMPAD_KEYSYMS
        }
        self._modifier_rows = [list(map(int, row)) for row in conn.get_modifier_mapping()]
        self._caps_lock = self._keycode_plain(XK.string_to_keysym("Caps_Lock"))
        self._num_lock = self._keycode_plain(XK.string_to_keysym("Num_Lock"))
        self._num_lock_mask = self._mask_of(self._num_lock)
        # The modifier bits a held key sets: every modifier's but Lock's and Num Lock's.
        self._held_mask = 0xFF & ~X.LockMask & ~self._num_lock_mask
        # Keycodes with no keysym, bound on demand to characters the keymap lacks; the
        # least recently used is rebound first.
        self._spare: list[int] = [int(first) + i for i, syms in enumerate(mapping) if not any(syms)]
        self._bound: OrderedDict[int, int] = OrderedDict()
        # While true, `sync()` owes the wait (`settle`) and leaves what is queued to be sent
        # (`send_unsent`).
        self.deferring = False
        self.owed = False
        self.unsent = False
        # Whether the X server has hung up (a look, no read): what a write would have told.
        self._hangup = select.poll()
        self._hangup.register(conn.fileno(), select.POLLRDHUP)

    # Low level

    def _keycode_plain(self, keysym: int) -> int:
        code = int(self.conn.keysym_to_keycode(keysym))
        if not code:
            raise BadRequest(f"no key for keysym 0x{keysym:x}")
        return code

    def _mask_of(self, code: int) -> int:
        """The state bit of the modifier whose keys include `code` (0: none)."""
        for row, codes in enumerate(self._modifier_rows):
            if code in codes:
                return 1 << row
        return 0

    def _modifier_state(self) -> int:
        """The X server's modifier bits now (Lock and Num Lock among them), after every
        request sent before (one round trip)."""
        return int(self.conn.screen().root.query_pointer().mask)

    def keycode(self, keysym: int) -> tuple[int, bool]:
        """The keycode that types `keysym`, and whether Shift must be down for it."""
        if keysym in self._bound:
            self._bound.move_to_end(keysym)
            return int(self._bound[keysym]), False
        found = sorted(self.conn.keysym_to_keycodes(keysym), key=lambda cs: cs[1])
        for code, index in found:
            if index in (0, 1):
                return int(code), index == 1
        return self._bind_spare(keysym), False

    def _bind_spare(self, keysym: int) -> int:
        if not self._spare and not self._bound:
            raise BadRequest(f"no free keycode to type keysym 0x{keysym:x}")
        if self._spare:
            code = self._spare.pop()
        else:
            _, code = self._bound.popitem(last=False)
        self.conn.change_keyboard_mapping(code, [(keysym,) * self._per_keycode])
        self.conn.sync()
        self._bound[keysym] = code
        return code

    def _start_landings(self, pointer: tuple[int, int]) -> None:
        """The state of what a page took (`_note`), before any event."""
        self._last_button = 0.0
        # Where the pointer was sent last, where the last button went down there (the
        # button as a page numbers it: X's less one), and whether a page took that press.
        self._pointer = pointer
        self._pressed = (-1, -1, -1)
        self._landed = threading.Event()
        # How many keys went down since the input began, how many of them a page told of
        # (`key_landed`, on the agent's loop), and when the last went down.
        self._keys_sent = 0
        self._keys_told = 0
        self._last_key = 0.0
        self._keys_lock = threading.Lock()
        self._keys_caught_up = threading.Event()
        self._keys_caught_up.set()
        # Whether a page told of a key since the last press.
        self._page_took_keys = False
        # Where the last button came up, and whether a page took that release.
        self._released = (-1, -1, -1)
        self._last_release = 0.0
        self._release_landed = threading.Event()
        self._release_landed.set()

    def _fake(
        self, kind: int, detail: int = 0, x: int = 0, y: int = 0, *, held: bool = False
    ) -> None:
        """Send one event; `held`: a modifier key a click or a drag holds, which the
        press carries in its state (a press does not wait for it to land)."""
        self._note(kind, detail, x, y, held)
        self._events.send(kind, detail, x, y)

    def _note(self, kind: int, detail: int, x: int, y: int, held: bool) -> None:
        """Before an event is sent: wait for what it must follow to land, and keep what a
        page's word of it will be matched with (for every kind of screen's input)."""
        if kind == X.MotionNotify:
            self._pointer = (x, y)
        elif kind in (X.ButtonPress, X.ButtonRelease):
            self._last_button = time.monotonic()
            if kind == X.ButtonPress and detail in POINTER_BUTTONS:
                self._let_the_keys_land()
                self._landed.clear()
                self._pressed = (*self._pointer, PAGE_BUTTONS[detail])
            elif kind == X.ButtonPress and detail in WHEEL_BUTTONS:
                self.let_the_release_land()
            elif kind == X.ButtonRelease and detail in POINTER_BUTTONS:
                self._release_landed.clear()
                self._released = (*self._pointer, PAGE_BUTTONS[detail])
                self._last_release = time.monotonic()
        elif kind == X.KeyPress:
            self._let_the_pointer_land()
            if not held:
                with self._keys_lock:
                    self._keys_sent += 1
                    self._last_key = time.monotonic()
                    self._keys_caught_up.clear()

    def _let_the_pointer_land(self) -> None:
        """Keys sent right after a click can reach a page before the click does: Chromium
        routes mouse events through a hit test that keyboard events skip, so the click
        that focuses an input can land after the first typed keys. Keys wait until a page
        has taken the last press (`pointer_landed`), or until a click is
        KEYS_AFTER_BUTTON_S old: a click outside any page tells nothing."""
        wait = self.keys_wait_s()
        if wait > 0:
            self.sync()
            self._landed.wait(wait)

    def _let_the_keys_land(self) -> None:
        """A press sent right after keys can reach a page before they do: Chromium hands
        a key to its input method first, so under load an Enter, then a click on Send 7 ms
        later, reached the page click first. A press waits until a page has told of as
        many keys as went down (`key_landed`), or until the last key is
        BUTTON_AFTER_KEYS_S old: keys that went elsewhere (the address bar, another
        program) tell nothing, and are then taken as told. When a page told of some of
        the keys since the last press, they go to a page, and the press waits for the
        rest up to BUTTON_AFTER_PAGE_KEYS_S."""
        wait = self.buttons_wait_s()
        if wait > 0:
            self.sync()
            self._keys_caught_up.wait(wait)
        with self._keys_lock:
            self._keys_told = self._keys_sent
            self._keys_caught_up.set()
            self._page_took_keys = False

    def let_the_release_land(self) -> None:
        """A wheel turned right after a click can move the page before the page took the
        click's release: Chromium scrolls on its compositor thread while the page's own
        thread still has the release to hit-test, which then finds what scrolled under
        the pointer (seen: a click on Send, a scroll 5 ms later, and Send took the press,
        and the focus, but no click). A wheel waits until a page took the last release
        (`pointer_released`), or until it is WHEEL_AFTER_RELEASE_S old."""
        wait = self.wheel_wait_s()
        if wait > 0:
            self.sync()
            self._release_landed.wait(wait)
        self._release_landed.set()

    def pointer_released(self, x: int, y: int, button: int) -> None:
        """A page of the screen's Chromium took a release at (`x`, `y`) (tab_watch.py),
        on any thread."""
        if (x, y, button) == self._released:
            self._release_landed.set()

    def wheel_wait_s(self) -> float:
        """How long a wheel turned now would wait for the last release to land (0: none)."""
        if self._release_landed.is_set():
            return 0.0
        return max(0.0, self._last_release + WHEEL_AFTER_RELEASE_S - time.monotonic())

    def wheel_ready(self) -> bool:
        return self.wheel_wait_s() == 0

    def key_landed(self) -> None:
        """A page of the screen's Chromium took a key going down (tab_watch.py), on any
        thread."""
        with self._keys_lock:
            # A word of keys already taken as told gives no credit to later ones.
            if self._keys_told < self._keys_sent:
                self._page_took_keys = True
            self._keys_told = min(self._keys_told + 1, self._keys_sent)
            if self._keys_told >= self._keys_sent:
                self._keys_caught_up.set()

    def buttons_wait_s(self) -> float:
        """How long a press sent now would wait for the last keys to land (0: none)."""
        if self._keys_caught_up.is_set():
            return 0.0
        cap = BUTTON_AFTER_PAGE_KEYS_S if self._page_took_keys else BUTTON_AFTER_KEYS_S
        return max(0.0, self._last_key + cap - time.monotonic())

    def buttons_ready(self) -> bool:
        return self.buttons_wait_s() == 0

    def pointer_landed(self, x: int, y: int, button: int) -> None:
        """A page of the screen's Chromium took a press at (`x`, `y`) of the screen
        (tab_watch.py), on any thread: when it is the last press sent, keys wait no
        longer. One told late, of an earlier press at the same place, counts too: that
        click has moved the focus where this one would."""
        if (x, y, button) == self._pressed:
            self._landed.set()

    def keys_wait_s(self) -> float:
        """How long a key sent now would wait for the last click to land (0: none)."""
        if self._landed.is_set():
            return 0.0
        return max(0.0, self._last_button + KEYS_AFTER_BUTTON_S - time.monotonic())

    def keys_ready(self) -> bool:
        return self.keys_wait_s() == 0

    def never_waits(self) -> bool:
        """For a call that cannot sleep (a release, a scroll): it may always run on the
        agent's loop (`Screen.on_input`)."""
        return True

    def sync(self) -> None:
        """Wait until the X server has done every request sent; while `deferring`, send
        them and owe the wait."""
        if self.deferring:
            if self._hangup.poll(0):
                # Sending now would fail: the step must not be answered as done.
                raise ConnectionClosedError("display")
            self.owed = self.unsent = True
            return
        self.conn.sync()
        self.owed = self.unsent = False

    def send_unsent(self) -> None:
        """Send what a deferred `sync()` left queued (its wait stays owed)."""
        if self.unsent:
            self.unsent = False
            self.conn.flush()

    def settle(self) -> None:
        """Wait for the X server if a deferred `sync()` is owed."""
        if self.owed:
            self.owed = self.unsent = False
            self.conn.sync()

    def position(self) -> tuple[int, int]:
        pointer = self.conn.screen().root.query_pointer()
        return int(pointer.root_x), int(pointer.root_y)

    def _check_point(self, x: int, y: int) -> None:
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise BadRequest(f"({x}, {y}) is off the screen of {self.width}x{self.height}")

    def _play(self, steps: list[MotionStep]) -> None:
        for step in steps:
            self._fake(X.MotionNotify, x=step.x, y=step.y)
            if step.pause_ms:
                self.sync()
                time.sleep(step.pause_ms / 1000)

    def travel(
        self, to: tuple[int, int] | None, motion: Motion, seed: int | None
    ) -> tuple[int, int]:
        """Move the pointer to `to` (None: stay) along the motion's path; no sync."""
        if to is None:
            return self.position()
        self._check_point(*to)
        start = self.position() if motion != "instant" else to
        self._play(plan(start, to, motion, seed, (self.width, self.height)))
        return to

    def point_at(self, at: tuple[int, int] | None) -> tuple[int, int]:
        """Move the pointer to `at` at once (None: leave it), and say where it is."""
        where = self.travel(at, "instant", None)
        self.sync()
        return where

    def _button(self, button: Button) -> int:
        if button not in BUTTONS:
            raise BadRequest(f"unknown button {button!r}")
        return BUTTONS[button]

    def _modifiers(self, held: Sequence[Modifier], down: bool) -> None:
        for name in held if down else reversed(held):
            code, _ = self.keycode(keys.modifier_keysym(name))
            self._fake(X.KeyPress if down else X.KeyRelease, code, held=True)

    # Pointer

    def move(self, to: tuple[int, int], motion: Motion, seed: int | None, pause_ms: int) -> None:
        self.travel(to, motion, seed)
        self.sync()
        if pause_ms > 0:
            time.sleep(min(pause_ms, 30_000) / 1000)

    def click(
        self,
        at: tuple[int, int] | None,
        button: Button,
        held: list[Modifier],
        motion: Motion,
        seed: int | None,
        count: int = 1,
    ) -> tuple[int, int]:
        detail = self._button(button)
        where = self.travel(at, motion, seed)
        self._modifiers(held, True)
        for n in range(count):
            if n:
                # Applications count clicks by their X timestamps; clicks in the same
                # millisecond are not taken for a double click.
                self.sync()
                time.sleep(DOUBLE_CLICK_GAP_S)
            self._fake(X.ButtonPress, detail)
            self._fake(X.ButtonRelease, detail)
        self._modifiers(held, False)
        self.sync()
        return where

    def drag(
        self,
        points: list[tuple[int, int]],
        button: Button,
        held: list[Modifier],
        motion: Motion,
        seed: int | None,
    ) -> tuple[int, int]:
        """Press at the first point, pass through the others, release at the last."""
        detail = self._button(button)
        for p in points:
            self._check_point(*p)
        self.travel(points[0], motion, seed)
        self._modifiers(held, True)
        self._fake(X.ButtonPress, detail)
        self.sync()
        here = points[0]
        for i, p in enumerate(points[1:]):
            if motion == "instant":
                # Drag-and-drop wants to see the pointer move a little before it leaves.
                nudge = (here[0] + (3 if p[0] >= here[0] else -3), here[1])
                self._play([MotionStep(*nudge, 10), MotionStep(*p, 10)])
            else:
                self._play(
                    plan(
                        here,
                        p,
                        motion,
                        None if seed is None else seed + i,
                        (self.width, self.height),
                    )
                )
            here = p
        self.sync()
        self._fake(X.ButtonRelease, detail)
        self._modifiers(held, False)
        self.sync()
        return here

    def button_down(
        self, at: tuple[int, int] | None, button: Button, motion: Motion, seed: int | None
    ) -> tuple[int, int]:
        detail = self._button(button)
        where = self.travel(at, motion, seed)
        self._fake(X.ButtonPress, detail)
        self.sync()
        return where

    def button_up(self, at: tuple[int, int] | None, button: Button) -> tuple[int, int]:
        detail = self._button(button)
        where = self.travel(at, "instant", None)
        self._fake(X.ButtonRelease, detail)
        self.sync()
        self.buttons.pop(button, None)
        return where

    def scroll(
        self, at: tuple[int, int] | None, dx: int, dy: int, held: Sequence[Modifier] = ()
    ) -> tuple[int, int]:
        if abs(dx) > MAX_SCROLL_NOTCHES or abs(dy) > MAX_SCROLL_NOTCHES:
            raise BadRequest(f"scroll at most {MAX_SCROLL_NOTCHES} notches at a time")
        where = self.travel(at, "instant", None)
        self._modifiers(held, True)
        for notches, less, more in ((dy, SCROLL_UP, SCROLL_DOWN), (dx, SCROLL_LEFT, SCROLL_RIGHT)):
            detail = more if notches > 0 else less
            for _ in range(abs(notches)):
                self._fake(X.ButtonPress, detail)
                self._fake(X.ButtonRelease, detail)
        self._modifiers(held, False)
        self.sync()
        return where

    # Keyboard

    def _tap(self, keysym: int) -> None:
        code, shifted = self.keycode(keysym)
        if code in self._numpad:
            # A keypad key's digit is its second level with Num Lock on, not with Shift
            # (which a page would see as shiftKey); its arrow or Home, with it off.
            self._set_num_lock(shifted)
            shifted = False
        if shifted:
            self._fake(X.KeyPress, self._shift)
        self._fake(X.KeyPress, code)
        self._fake(X.KeyRelease, code)
        if shifted:
            self._fake(X.KeyRelease, self._shift)

    def _set_num_lock(self, on: bool) -> None:
        if bool(self._modifier_state() & self._num_lock_mask) != on:
            self._fake(X.KeyPress, self._num_lock)
            self._fake(X.KeyRelease, self._num_lock)

    def _set_aside(self) -> tuple[list[int], bool]:
        """Release the modifier keys that are down (a `key_down` of an earlier step, a
        person's) and turn Caps Lock off, so that each character typed is that character;
        return what to put back (`_put_back`)."""
        state = self._modifier_state()
        locked = bool(state & X.LockMask)
        held: list[int] = []
        # Which keys are down only when a modifier other than the locks is on (a second
        # round trip, which typing with nothing held does without).
        if state & self._held_mask:
            down = self.conn.query_keymap()
            held = [
                code
                for row, codes in enumerate(self._modifier_rows)
                if row != LOCK_ROW
                for code in codes
                if code and down[code // 8] >> (code % 8) & 1
            ]
        for code in held:
            self._fake(X.KeyRelease, code)
        if locked:
            self._fake(X.KeyPress, self._caps_lock)
            self._fake(X.KeyRelease, self._caps_lock)
        return held, locked

    def _put_back(self, held: list[int], locked: bool) -> None:
        if locked:
            self._fake(X.KeyPress, self._caps_lock)
            self._fake(X.KeyRelease, self._caps_lock)
        for code in held:
            self._fake(X.KeyPress, code)

    def type_text(self, text: str, delay_ms: int) -> int:
        if not 0 <= delay_ms <= MAX_TYPE_DELAY_MS:
            raise BadRequest(f"delay_ms must be 0 to {MAX_TYPE_DELAY_MS}")
        held, locked = self._set_aside()
        try:
            for char in text:
                self._type_char(char)
                if delay_ms:
                    self.sync()
                    time.sleep(delay_ms / 1000)
        finally:
            self._put_back(held, locked)
        self.sync()
        return len(text)

    def _type_char(self, char: str) -> None:
        self._tap(keys.char_keysym(char))

    def press(self, chord: list[str], then: list[str], held: list[Modifier]) -> None:
        together = [sym for name in chord for sym in keys.chord_keysyms(name)]
        one_by_one = [keys.chord_keysyms(name) for name in then]
        self._modifiers(held, True)
        self._press_together(together)
        for syms in one_by_one:
            self._press_together(syms)
        self._modifiers(held, False)
        self.sync()

    def _press_together(self, keysyms: list[int]) -> None:
        if len(keysyms) == 1:
            self._tap(keysyms[0])
            return
        codes = [self.keycode(sym)[0] for sym in keysyms]
        for code in codes:
            self._fake(X.KeyPress, code)
        for code in reversed(codes):
            self._fake(X.KeyRelease, code)

    def key_down(self, key: str) -> None:
        for sym in keys.chord_keysyms(key):
            self._fake(X.KeyPress, self.keycode(sym)[0])
        self.sync()

    def key_up(self, key: str) -> None:
        for sym in reversed(keys.chord_keysyms(key)):
            self._fake(X.KeyRelease, self.keycode(sym)[0])
        self.sync()
        self.keys.pop(key, None)

    # Holds

    def hold(self, table: dict[str, Down], name: str, release_at_ms: int, explicit: bool) -> int:
        self._tokens += 1
        table[name] = Down(self._tokens, release_at_ms, explicit)
        return self._tokens

    def release_if(self, kind: str, name: str, token: int) -> None:
        """Release a button or key that its hold time ran out for, unless it went up (or
        down again) since."""
        table = self.buttons if kind == "button" else self.keys
        down = table.get(name)
        if down is None or down.token != token:
            return
        if kind == "button":
            self.button_up(None, name)  # type: ignore[arg-type]
        else:
            self.key_up(name)

    def end_batch(self) -> tuple[list[str], list[str], list[str], list[str], int | None]:
        """Release what has no hold_ms; return (released buttons, released keys, held
        buttons, held keys, when the held ones are released)."""
        released_buttons = [b for b, d in self.buttons.items() if not d.explicit]
        released_keys = [k for k, d in self.keys.items() if not d.explicit]
        for b in released_buttons:
            self.button_up(None, b)  # type: ignore[arg-type]
        for k in released_keys:
            self.key_up(k)
        deadlines = [d.release_at_ms for d in (*self.buttons.values(), *self.keys.values())]
        return (
            released_buttons,
            released_keys,
            list(self.buttons),
            list(self.keys),
            max(deadlines) if deadlines else None,
        )
