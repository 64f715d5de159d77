"""The virtual keyboard's XKB keymap: the US layout, plus keys bound on demand to the
characters it lacks.

The layout comes from the host's xkeyboard-config through includes (`pc+us`), which the
compositor's libxkbcommon resolves; the agent asks libxkbcommon itself (through ctypes:
four functions) which key and level types each keysym. F13 to F24 are the spare keys
(SPARE), each bound to
one keysym at one level, the least recently used rebound first (a new keymap is sent).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections import OrderedDict
from functools import cache

from holm.errors import BadRequest

# F13 to F24's keycodes, bound to nothing in `pc+us`. Chromium takes a key's character
# from its keysym only for a keycode it knows a key of (others it drops), and types the key
# it knows for a few whatever they are bound to (evdev's 200 is MediaPlay): F13 to F24 are
# known and take their keysym's character.
SPARE = range(191, 203)
SHIFT_LEVEL = 1
# XKB keycodes are evdev's plus 8 (the virtual keyboard takes evdev's).
EVDEV_OFFSET = 8

_BASE = """xkb_keymap {
  xkb_keycodes "holm" { include "evdev+aliases(qwerty)" };
  xkb_types "holm" { include "complete" };
  xkb_compat "holm" { include "complete" };
  xkb_symbols "holm" {
    include "pc+us"
%s
  };
};
"""


def keymap_text(bound: dict[int, int]) -> str:
    """The keymap with `bound` (keycode → keysym) on the spare keys."""
    keys = "".join(
        f"    key <FK{code - 178}> {{ [ 0x{sym:x} ] }};\n" for code, sym in bound.items()
    )
    return _BASE % keys


@cache
def _lib() -> ctypes.CDLL:
    name = ctypes.util.find_library("xkbcommon") or "libxkbcommon.so.0"
    lib = ctypes.CDLL(name)
    lib.xkb_context_new.restype = ctypes.c_void_p
    lib.xkb_context_new.argtypes = [ctypes.c_int]
    lib.xkb_keymap_new_from_string.restype = ctypes.c_void_p
    lib.xkb_keymap_new_from_string.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_int,
    ]
    lib.xkb_keymap_num_levels_for_key.restype = ctypes.c_uint
    lib.xkb_keymap_num_levels_for_key.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
    lib.xkb_keymap_key_get_syms_by_level.restype = ctypes.c_int
    lib.xkb_keymap_key_get_syms_by_level.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.POINTER(ctypes.POINTER(ctypes.c_uint32)),
    ]
    return lib


@cache
def base_keys() -> dict[int, tuple[int, bool]]:
    """Each keysym of the base layout with its XKB keycode and whether Shift types it
    (the lowest keycode and level that type it)."""
    lib = _lib()
    context = lib.xkb_context_new(0)
    keymap = lib.xkb_keymap_new_from_string(context, keymap_text({}).encode(), 1, 0)
    if not keymap:
        raise BadRequest("libxkbcommon could not compile the US keymap (xkb-data missing?)")
    found: dict[int, tuple[int, bool]] = {}
    for code in range(8, 256):
        for level in range(min(2, lib.xkb_keymap_num_levels_for_key(keymap, code, 0))):
            syms = ctypes.POINTER(ctypes.c_uint32)()
            for i in range(lib.xkb_keymap_key_get_syms_by_level(keymap, code, 0, level, syms)):
                found.setdefault(int(syms[i]), (code, level == SHIFT_LEVEL))
    return found


class Keymap:
    """Which key types each keysym, binding spare keys as needed; `changed` says a new
    keymap is due before the keys that need it are sent."""

    def __init__(self) -> None:
        self.base = base_keys()
        self.bound: OrderedDict[int, int] = OrderedDict()  # keysym → keycode
        self.changed = True

    def keycode(self, keysym: int, pinned: set[int] | None = None) -> tuple[int, bool]:
        """The XKB keycode that types `keysym` and whether Shift must be down for it; a
        keycode in `pinned` (needed by keys not yet sent) is not rebound."""
        if keysym in self.base:
            return self.base[keysym]
        if keysym in self.bound:
            self.bound.move_to_end(keysym)
            return self.bound[keysym], False
        used = set(self.bound.values())
        free = [c for c in SPARE if c not in used]
        if free:
            code = free[0]
        else:
            victim = next((s for s, c in self.bound.items() if c not in (pinned or set())), None)
            if victim is None:
                raise BadRequest("too many different characters at once for the keymap")
            code = self.bound.pop(victim)
        self.bound[keysym] = code
        self.changed = True
        return code, False

    def text(self) -> str:
        self.changed = False
        return keymap_text({code: sym for sym, code in self.bound.items()})
