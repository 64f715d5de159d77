"""Pointer and keyboard input through wlroots' virtual pointer and virtual keyboard, in
process, on the screen's input connection to its compositor.

The X11 wing's `Input` (holm/agent/x11/input.py) plans every action (clicks and their
counts, held modifiers, drags, paths, scrolls, typing, chords, holds) as a sequence of
X-style events; this one sends each of those events as the virtual devices' requests
instead, so every action behaves as on X11. What differs: keycodes come from the keymap
the agent gives the virtual keyboard (keymap.py), which binds any character it lacks to a
spare key, and the pointer's place is where the agent last sent it (a Wayland client cannot
ask the compositor where the pointer is; this is the only pointer of the screen's seat).
`sync()` is a roundtrip: the compositor has then done every request sent before.
"""

from __future__ import annotations

import mmap
import os
import select
import time

from Xlib import XK, X

from holm.agent.wayland.connection import Connection
from holm.agent.wayland.keymap import EVDEV_OFFSET, Keymap
from holm.agent.x11.input import PAGE_BUTTONS as PAGE_BUTTONS
from holm.agent.x11.input import Down
from holm.agent.x11.input import Input as X11Input

# X's buttons as the kernel's input codes (linux/input-event-codes.h).
EVDEV_BUTTONS = {1: 0x110, 2: 0x112, 3: 0x111, 8: 0x113, 9: 0x114}
# X's wheel buttons as (axis, direction): wl_pointer's axis 0 is vertical, 1 horizontal.
WHEEL = {4: (0, -1), 5: (0, 1), 6: (1, -1), 7: (1, 1)}
# What one notch scrolls, in wl_pointer's units (libinput's for one wheel click).
NOTCH = 15.0
KEYMAP_FORMAT_XKB_V1 = 1
# The modifier keys by keysym name, with their XKB modifier bits (Shift, Control, Mod1,
# Mod4, Mod5: the real modifiers are the keymap's first eight, in this order).
MODIFIER_BITS = {
    "Shift_L": 1,
    "Shift_R": 1,
    "Control_L": 4,
    "Control_R": 4,
    "Alt_L": 8,
    "Alt_R": 8,
    "Meta_L": 8,
    "Super_L": 64,
    "Super_R": 64,
    "ISO_Level3_Shift": 128,
}
LOCK_BIT = 2


def _now_ms() -> int:
    return int(time.monotonic() * 1000) & 0xFFFFFFFF


class Input(X11Input):
    def __init__(self, socket_path: str, width: int, height: int) -> None:
        # Not X11Input.__init__: that one reads an X server's keyboard mapping.
        self.conn = Connection(
            socket_path,
            ("wl_seat", "zwlr_virtual_pointer_manager_v1", "zwp_virtual_keyboard_manager_v1"),
        )
        self.wayland = self.conn
        seat = self.wayland["wl_seat"]
        self._pointer_dev = self.wayland["zwlr_virtual_pointer_manager_v1"].create_virtual_pointer(
            seat
        )
        self._keyboard = self.wayland["zwp_virtual_keyboard_manager_v1"].create_virtual_keyboard(
            seat
        )
        self.width = width
        self.height = height
        self.buttons: dict[str, Down] = {}
        self.keys: dict[str, Down] = {}
        self._tokens = 0
        self._start_landings((width // 2, height // 2))
        self._keymap = Keymap()
        self._shift = self._keymap.keycode(int(XK.string_to_keysym("Shift_L")))[0]
        self._numpad: set[int] = set()
        self._down: set[int] = set()
        # The virtual keyboard's key events change no modifier state in the compositor
        # (wlroots takes them as a client's, whose modifiers it says itself): the agent
        # keeps the state and sends it after each modifier key.
        self._modifier_bits = {
            self._keymap.base[sym][0]: bit
            for name, bit in MODIFIER_BITS.items()
            if (sym := int(XK.string_to_keysym(name))) in self._keymap.base
        }
        self._caps_lock = self._keymap.keycode(int(XK.string_to_keysym("Caps_Lock")))[0]
        self._caps_locked = False
        self.deferring = False
        self.owed = False
        self.unsent = False
        self._hangup = select.poll()
        self._hangup.register(self.wayland.display.get_fd(), select.POLLRDHUP)
        self._send_keymap()
        # The compositor's pointer starts where this one says it is.
        self._fake(X.MotionNotify, x=self._pointer[0], y=self._pointer[1])
        self.wayland.roundtrip()

    def _send_keymap(self) -> None:
        text = self._keymap.text().encode() + b"\0"
        fd = os.memfd_create("holm-keymap", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, len(text))
            with mmap.mmap(fd, len(text)) as m:
                m.write(text)
            self._keyboard.keymap(KEYMAP_FORMAT_XKB_V1, fd, len(text))
        finally:
            os.close(fd)

    # Low level (X11Input's, for the virtual devices)

    def keycode(self, keysym: int) -> tuple[int, bool]:
        found = self._keymap.keycode(keysym, self._down)
        if self._keymap.changed:
            # Before the key that needs it: the compositor takes requests in order.
            self._send_keymap()
        return found

    def _fake(
        self, kind: int, detail: int = 0, x: int = 0, y: int = 0, *, held: bool = False
    ) -> None:
        self._note(kind, detail, x, y, held)
        at = _now_ms()
        if kind == X.MotionNotify:
            self._pointer_dev.motion_absolute(at, x, y, self.width, self.height)
            self._pointer_dev.frame()
        elif kind in (X.ButtonPress, X.ButtonRelease):
            if detail in WHEEL:
                if kind == X.ButtonPress:
                    axis, direction = WHEEL[detail]
                    self._pointer_dev.axis_source(0)
                    self._pointer_dev.axis_discrete(at, axis, direction * NOTCH, direction)
                    self._pointer_dev.frame()
            else:
                self._pointer_dev.button(at, EVDEV_BUTTONS[detail], kind == X.ButtonPress)
                self._pointer_dev.frame()
        elif kind in (X.KeyPress, X.KeyRelease):
            if kind == X.KeyPress:
                self._down.add(detail)
                if detail == self._caps_lock:
                    self._caps_locked = not self._caps_locked
            else:
                self._down.discard(detail)
            self._keyboard.key(at, detail - EVDEV_OFFSET, kind == X.KeyPress)
            if detail in self._modifier_bits or detail == self._caps_lock:
                self._send_modifiers()

    def _type_char(self, char: str) -> None:
        code = ord(char)
        if code <= 0xFFFF:
            super()._type_char(char)
            return
        # Chromium keeps one UTF-16 unit of a key's character (its KeyEvent's char16_t):
        # a key of the character's own keysym arrives as its low 16 bits (U+1F600 as
        # U+F600). Two keys of the surrogates' keysyms arrive as the pair, which the field
        # joins into the character.
        code -= 0x10000
        for unit in (0xD800 | code >> 10, 0xDC00 | code & 0x3FF):
            self._tap(0x01000000 | unit)

    def _send_modifiers(self) -> None:
        depressed = 0
        for code in self._down:
            depressed |= self._modifier_bits.get(code, 0)
        self._keyboard.modifiers(depressed, 0, LOCK_BIT if self._caps_locked else 0, 0)

    def sync(self) -> None:
        if self.deferring:
            if self._hangup.poll(0):
                raise ConnectionError("the compositor hung up")
            self.owed = self.unsent = True
            return
        self.wayland.roundtrip()
        self.owed = self.unsent = False

    def send_unsent(self) -> None:
        if self.unsent:
            self.unsent = False
            self.wayland.flush()

    def settle(self) -> None:
        if self.owed:
            self.owed = self.unsent = False
            self.wayland.roundtrip()

    def position(self) -> tuple[int, int]:
        return self._pointer

    def _set_aside(self) -> tuple[list[int], bool]:
        """Release the modifier keys this keyboard holds down and turn Caps Lock off, so
        that each character typed is that character (the virtual keyboard is the seat's
        only one: its own keys are all that can be down)."""
        held = sorted(c for c in self._down if c in self._modifier_bits)
        for code in held:
            self._fake(X.KeyRelease, code)
        locked = self._caps_locked
        if locked:
            self._fake(X.KeyPress, self._caps_lock)
            self._fake(X.KeyRelease, self._caps_lock)
        return held, locked

    def _set_num_lock(self, on: bool) -> None:
        # The keypad's digits are typed at their own level (no Num Lock to switch).
        return

    def close(self) -> None:
        """Let the compositor drop the devices, then free the connection (on the input
        thread, or with nothing on it)."""
        self._keyboard.destroy()
        self._pointer_dev.destroy()
        self.wayland.flush()
        self.wayland.close()
