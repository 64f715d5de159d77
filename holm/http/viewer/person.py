"""What a person does through a control viewer, told in the actions an agent uses: the RFB
key and pointer events passing the relay are coalesced into `click`, `drag`, `scroll`,
`type` (a run of printable characters) and `press` (a key or chord, such as ctrl+l), and
recorded as `acted` entries with actor `person`.

Pointer moves without a button are not recorded (the frames show where the pointer went);
neither is clipboard text (as for an agent, the trace keeps no clipboard text). Recording
never holds the relay: entries go to a bounded queue appended in order by one task, and a
person faster than the journal loses entries (logged), not input."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from functools import cache

from Xlib import XK

from holm.wire.actions import Action, Click, Drag, Press, Scroll, Type
from holm.wire.values import Button, Modifier, Point

from .rfb import KeyEvent, Message, PointerEvent, decode_input

log = logging.getLogger(__name__)

Record = Callable[[Action], Awaitable[None]]

MAX_QUEUED = 1000
# A button released within this many pixels of where it went down is a click.
CLICK_SLOP = 4
MAX_TEXT = 1000

_MODIFIERS: dict[str, Modifier] = {
    "Shift_L": "shift",
    "Shift_R": "shift",
    "Control_L": "ctrl",
    "Control_R": "ctrl",
    "Alt_L": "alt",
    "Alt_R": "alt",
    "Meta_L": "alt",
    "Meta_R": "alt",
    "Super_L": "super",
    "Super_R": "super",
}
_BUTTONS: dict[int, Button] = {1: "left", 2: "middle", 4: "right"}
# Wheel buttons: (dx, dy) notches.
_WHEEL = {8: (0, -1), 16: (0, 1), 32: (-1, 0), 64: (1, 0)}


def _char_of(keysym: int) -> str | None:
    """The character a keysym types, for printable ones."""
    if 0x20 <= keysym <= 0x7E or 0xA0 <= keysym <= 0xFF:
        return chr(keysym)
    if 0x01000000 <= keysym <= 0x0110FFFF:
        char = chr(keysym - 0x01000000)
        return char if char.isprintable() else None
    return None


@cache
def _names() -> dict[int, str]:
    """X's name of each keysym (`Return`, `Control_L`, `F5`), as the agent's key names
    take them; the first name of a keysym with several."""
    XK.load_keysym_group("latin1")
    XK.load_keysym_group("miscellany")
    names: dict[int, str] = {}
    for attr in dir(XK):
        if attr.startswith("XK_"):
            names.setdefault(getattr(XK, attr), attr[3:])
    return names


def _name_of(keysym: int) -> str:
    return _names().get(keysym) or f"0x{keysym:x}"


class PersonInput:
    """Fed the relay's input messages (`__call__`); `close` records what is pending and
    waits for the queue to be appended."""

    def __init__(self, record: Record) -> None:
        self._record = record
        self._queue: asyncio.Queue[Action] = asyncio.Queue(MAX_QUEUED)
        self._task = asyncio.create_task(self._append(), name="person input")
        self._mods: list[Modifier] = []
        self._text = ""
        self._buttons = 0
        self._down: tuple[Button, Point] | None = None
        self._scroll: tuple[Point, int, int] | None = None

    def __call__(self, message: Message) -> None:
        event = decode_input(message)
        if isinstance(event, KeyEvent):
            self._key(event)
        elif isinstance(event, PointerEvent):
            self._pointer(event)

    async def close(self) -> None:
        self._flush()
        await self._queue.join()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    # Keys

    def _key(self, event: KeyEvent) -> None:
        name = _name_of(event.keysym)
        modifier = _MODIFIERS.get(name)
        if modifier is not None:
            if event.down and modifier not in self._mods:
                self._mods.append(modifier)
            elif not event.down and modifier in self._mods:
                self._mods.remove(modifier)
            return
        if not event.down:
            return
        char = _char_of(event.keysym)
        if char is not None and not set(self._mods) - {"shift"}:
            self._flush_scroll()
            self._text += char
            if len(self._text) >= MAX_TEXT:
                self._flush_text()
            return
        self._flush()
        key = char.lower() if char is not None and len(char) == 1 else name
        self._put(Press(chord=[*self._mods, key]))

    # The pointer

    def _pointer(self, event: PointerEvent) -> None:
        at = Point(x=event.x, y=event.y)
        pressed = event.buttons & ~self._buttons
        released = self._buttons & ~event.buttons
        self._buttons = event.buttons
        for bit, (dx, dy) in _WHEEL.items():
            if pressed & bit:
                self._wheel(at, dx, dy)
        for bit, button in _BUTTONS.items():
            if pressed & bit and self._down is None:
                self._flush()
                self._down = (button, at)
            elif released & bit and self._down is not None and self._down[0] == button:
                button, start = self._down
                self._down = None
                held = list(self._mods)
                if abs(at.x - start.x) <= CLICK_SLOP and abs(at.y - start.y) <= CLICK_SLOP:
                    self._put(Click(at=start, button=button, held=held))
                else:
                    self._put(Drag(from_=start, to=at, button=button, held=held))

    def _wheel(self, at: Point, dx: int, dy: int) -> None:
        self._flush_text()
        if self._scroll is not None and self._scroll[0] == at:
            _, sx, sy = self._scroll
            self._scroll = (at, sx + dx, sy + dy)
            if abs(sx + dx) >= 50 or abs(sy + dy) >= 50:
                self._flush_scroll()
            return
        self._flush_scroll()
        self._scroll = (at, dx, dy)

    # Recording

    def _flush(self) -> None:
        self._flush_text()
        self._flush_scroll()

    def _flush_text(self) -> None:
        if self._text:
            self._put(Type(text=self._text))
            self._text = ""

    def _flush_scroll(self) -> None:
        if self._scroll is not None:
            at, dx, dy = self._scroll
            self._scroll = None
            if dx or dy:
                self._put(Scroll(at=at, dx=dx, dy=dy))

    def _put(self, action: Action) -> None:
        try:
            self._queue.put_nowait(action)
        except asyncio.QueueFull:
            log.warning("a person's input came faster than it could be recorded: one dropped")

    async def _append(self) -> None:
        while True:
            action = await self._queue.get()
            try:
                await self._record(action)
            except Exception:
                log.exception("could not record a person's action")
            finally:
                self._queue.task_done()


__all__ = ["PersonInput"]
