"""Key names to X keysyms.

A key name is, in this order:
- an alias (any case): `ctrl`, `shift`, `alt`, `super`, `enter`, `esc`, `pageup`, … (ALIASES);
- an X keysym name, in any case: `Return`, `Tab`, `F5`, `BackSpace`, `Left`, `a`, `A`;
- one character (any Unicode), typed as that character;
- several of these joined by `+`: `ctrl+l`, `ctrl+shift+t` (a chord).

The names and aliases are holm/wire/keys.py's, where the engine checks and normalizes them.
"""

from __future__ import annotations

from functools import cache

from Xlib import XK

from holm.errors import BadRequest
from holm.wire.keys import ALIASES, normalize_key, split_chord

# Characters typed with a function key rather than their own keysym.
_CONTROL_CHARS = {"\n": "Return", "\r": "Return", "\t": "Tab", "\b": "BackSpace", "\x1b": "Escape"}


def char_keysym(char: str) -> int:
    """The keysym that types `char`: Latin-1 keysyms equal their code points, every other
    character has the Unicode keysym 0x01000000 + its code point."""
    if char in _CONTROL_CHARS:
        return int(XK.string_to_keysym(_CONTROL_CHARS[char]))
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 | code


@cache
def _keysyms_by_lower_name() -> dict[str, int]:
    names: dict[str, int] = {}
    for attr, value in vars(XK).items():
        if attr.startswith("XK_") and isinstance(value, int):
            names.setdefault(attr[3:].lower(), value)
    return names


def key_keysym(name: str) -> int:
    """The keysym of one key name (not a chord)."""
    if not name:
        raise BadRequest("an empty key name")
    alias = ALIASES.get(name.lower())
    if alias is not None:
        return int(XK.string_to_keysym(alias))
    exact = XK.string_to_keysym(name)
    if exact:
        return int(exact)
    if len(name) == 1:
        return char_keysym(name)
    by_lower = _keysyms_by_lower_name().get(name.lower())
    if by_lower is not None:
        return by_lower
    # Refused with the nearest known names, as the engine refuses it before it gets here.
    normalize_key(name)
    raise BadRequest(f"unknown key {name!r} (see docs/agent.md for key names)")


def chord_keysyms(name: str) -> list[int]:
    """The keysyms of a key name, `+` joining keys pressed together (`ctrl+l`). A lone `+`
    and a trailing `+` (`ctrl++`) are the plus key."""
    return [key_keysym(p) for p in split_chord(name)]


MODIFIER_KEYS: dict[str, str] = {
    "shift": "Shift_L",
    "ctrl": "Control_L",
    "alt": "Alt_L",
    "super": "Super_L",
}


def modifier_keysym(name: str) -> int:
    if name not in MODIFIER_KEYS:
        raise BadRequest(f"unknown modifier {name!r}: use shift, ctrl, alt or super")
    return int(XK.string_to_keysym(MODIFIER_KEYS[name]))
