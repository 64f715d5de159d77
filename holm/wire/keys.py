"""Key names, as `press` (`chord`, `then`) and `key_down`/`key_up` take them, checked and
written the one way a trace records them.

A key name is, in this order:
- an alias (any case): `ctrl`, `shift`, `alt`, `super`, `enter`, `esc`, `pageup`, … (ALIASES);
- an X keysym name, in any case: `Return`, `Tab`, `F5`, `BackSpace`, `Left`, `a`, `A`;
- one character (any Unicode), typed as that character;
- several of these joined by `+`: `ctrl+l`, `ctrl+shift+t` (a chord). A lone `+` and a
  trailing `+` (`ctrl++`) are the plus key.

Normalized, an alias is written in lower case (`CTRL` → `ctrl`), a keysym name as X spells
it (`return` → `Return`, `f5` → `F5`), and one character as it is (`A` stays `A`), but for a
capital letter among other keys of a chord, which names the letter's key (`CTRL+L` →
`ctrl+l`, as the computer-use formats of models write it; `ctrl+shift+l` for a capital). A name
that is none of these is refused with `bad_request`, naming it and the nearest known names,
before anything runs or is recorded (the engine normalizes each action first:
`normalized_action`). The agent turns the names into keysyms (holm/agent/x11/keys.py).
"""

from __future__ import annotations

import difflib
from functools import cache

import msgspec
from Xlib import XK

from holm.errors import BadRequest
from holm.wire.actions import Action, KeyDown, KeyUp, Press

ALIASES: dict[str, str] = {
    # Modifiers, as people, DOM `key` values and both computer-use formats name them. Meta
    # is the Super key (the Windows or Command key), as browsers report it: X's own
    # Meta_L sits on the Alt key, at its shifted level.
    "ctrl": "Control_L",
    "control": "Control_L",
    "shift": "Shift_L",
    "alt": "Alt_L",
    "option": "Alt_L",
    "super": "Super_L",
    "win": "Super_L",
    "windows": "Super_L",
    "cmd": "Super_L",
    "command": "Super_L",
    "meta": "Super_L",
    "os": "Super_L",
    "altgr": "ISO_Level3_Shift",
    # Other keys: X's names for them are keysym names (Return, Prior, BackSpace, …).
    "enter": "Return",
    "return": "Return",
    "esc": "Escape",
    "escape": "Escape",
    "backspace": "BackSpace",
    "bksp": "BackSpace",
    "del": "Delete",
    "delete": "Delete",
    "ins": "Insert",
    "insert": "Insert",
    "pageup": "Prior",
    "pgup": "Prior",
    "page_up": "Prior",
    "pagedown": "Next",
    "pgdn": "Next",
    "page_down": "Next",
    "home": "Home",
    "end": "End",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "arrowup": "Up",
    "arrowdown": "Down",
    "arrowleft": "Left",
    "arrowright": "Right",
    "space": "space",
    "spacebar": "space",
    "tab": "Tab",
    "capslock": "Caps_Lock",
    "numlock": "Num_Lock",
    "scrolllock": "Scroll_Lock",
    "menu": "Menu",
    "contextmenu": "Menu",
    "apps": "Menu",
    "print": "Print",
    "printscreen": "Print",
    "prtsc": "Print",
    "pause": "Pause",
    "break": "Pause",
    "plus": "plus",
    "minus": "minus",
    "slash": "slash",
    "backslash": "backslash",
}


@cache
def keysym_names() -> dict[str, str]:
    """Every X keysym name the agent knows, by its lower-case spelling."""
    names: dict[str, str] = {}
    for attr, value in vars(XK).items():
        if attr.startswith("XK_") and isinstance(value, int):
            names.setdefault(attr[3:].lower(), attr[3:])
    return names


def split_chord(name: str) -> list[str]:
    """The keys of one `+`-joined name (`ctrl+l` → `ctrl`, `l`), unchecked."""
    if len(name) > 1 and "+" in name:
        if name.endswith("++"):
            return [*name[:-2].split("+"), "+"]
        return name.split("+")
    return [name]


def as_list(value: str | list[str]) -> list[str]:
    """A string as a list of one (none when it is empty), a list as it is."""
    if isinstance(value, str):
        return [value] if value else []
    return list(value)


def normalize_key(name: str) -> str:
    """One key name (not a chord) as the trace records it; BadRequest when unknown."""
    if not name:
        raise BadRequest("an empty key name")
    if len(name) == 1:
        return name
    lower = name.lower()
    if lower in ALIASES:
        return lower
    if XK.string_to_keysym(name):
        return name
    known = keysym_names().get(lower)
    if known is not None:
        return known
    candidates = [*ALIASES, *(k for k in keysym_names() if k not in ALIASES)]
    close = difflib.get_close_matches(lower, candidates, n=3, cutoff=0.6)
    nearest = [c if c in ALIASES else keysym_names()[c] for c in close]
    hint = f"; the nearest known: {', '.join(nearest)}" if nearest else ""
    raise BadRequest(f"unknown key {name!r}{hint} (docs/agent.md lists key names)")


def _keys_of(parts: list[str]) -> list[str]:
    """The keys of a chord, normalized: with other keys, a capital letter is its key's name."""
    keys = [normalize_key(part) for part in parts]
    if len(keys) > 1:
        keys = [k.lower() if len(k) == 1 and k.isupper() else k for k in keys]
    return keys


def normalize_combo(name: str) -> str:
    """A `+`-joined name with each key normalized (`CTRL+Shift+T` → `ctrl+shift+t`)."""
    return "+".join(_keys_of(split_chord(name)))


def normalized_chord(value: str | list[str]) -> list[str]:
    """`press`'s `chord`: a string (`"ctrl+l"`) or a list (`["CTRL", "L"]`, items may be
    chords too) → the list of its keys, normalized (`["ctrl", "l"]`)."""
    return _keys_of([key for item in as_list(value) for key in split_chord(item)])


def normalized_then(value: str | list[str]) -> list[str]:
    """`press`'s `then`: keys pressed one after the other, each maybe a chord; a string is
    split on spaces (`"Tab Tab ctrl+a"`)."""
    items = value.split() if isinstance(value, str) and len(value) > 1 else as_list(value)
    return [normalize_combo(item) for item in items]


def normalized_key_name(value: str | list[str]) -> str:
    """`key_down`/`key_up`'s `key`: a name, a chord (`"ctrl+shift"`), or a list of keys held
    together → one `+`-joined name, normalized."""
    return "+".join(normalized_chord(value))


def normalized_action(action: Action) -> Action:
    """The action with its key names normalized (BadRequest naming an unknown one); any
    other action as it is."""
    match action:
        case Press(chord=chord, then=then):
            return msgspec.structs.replace(
                action, chord=normalized_chord(chord), then=normalized_then(then)
            )
        case KeyDown(key=key) | KeyUp(key=key):
            return msgspec.structs.replace(action, key=normalized_key_name(key))
    return action


__all__ = [
    "ALIASES",
    "as_list",
    "keysym_names",
    "normalize_combo",
    "normalize_key",
    "normalized_action",
    "normalized_chord",
    "normalized_key_name",
    "normalized_then",
    "split_chord",
]
