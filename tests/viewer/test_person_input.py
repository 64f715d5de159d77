"""A person's RFB events, coalesced into the actions an agent uses."""

from __future__ import annotations

import struct

from holm.http.viewer.person import PersonInput
from holm.http.viewer.rfb import Message
from holm.wire.actions import Action, Click, Drag, Press, Scroll, Type
from holm.wire.values import Point

CTRL, SHIFT, RETURN = 0xFFE3, 0xFFE1, 0xFF0D


def key(keysym: int, down: bool = True) -> Message:
    return Message(4, b"\x04" + bytes([down]) + b"\x00\x00" + struct.pack(">I", keysym))


def tap(keysym: int) -> list[Message]:
    return [key(keysym), key(keysym, down=False)]


def pointer(buttons: int, x: int, y: int) -> Message:
    return Message(5, b"\x05" + bytes([buttons]) + struct.pack(">HH", x, y))


async def recorded(messages: list[Message]) -> list[Action]:
    actions: list[Action] = []

    async def record(action: Action) -> None:
        actions.append(action)

    person = PersonInput(record)
    for message in messages:
        person(message)
    await person.close()
    return actions


async def test_keys_become_text_chords_and_presses() -> None:
    messages = [
        *tap(ord("h")),
        key(SHIFT),
        *tap(ord("I")),
        key(SHIFT, down=False),
        key(CTRL),
        *tap(ord("l")),
        key(CTRL, down=False),
        *tap(RETURN),
        *tap(ord("x")),
    ]
    assert await recorded(messages) == [
        Type(text="hI"),
        Press(chord=["ctrl", "l"]),
        Press(chord=["Return"]),
        Type(text="x"),
    ]


async def test_the_pointer_becomes_clicks_drags_and_scrolls() -> None:
    messages = [
        pointer(0, 10, 10),  # a move: not recorded
        pointer(1, 100, 100),
        pointer(0, 101, 102),  # released near where it went down: a click
        pointer(4, 200, 200),
        pointer(4, 300, 250),
        pointer(0, 300, 250),  # released far away: a drag
        pointer(16, 50, 60),
        pointer(0, 50, 60),
        pointer(16, 50, 60),
        pointer(0, 50, 60),  # two wheel notches down at one point: one scroll
    ]
    assert await recorded(messages) == [
        Click(at=Point(x=100, y=100)),
        Drag(from_=Point(x=200, y=200), to=Point(x=300, y=250), button="right"),
        Scroll(at=Point(x=50, y=60), dy=2),
    ]
