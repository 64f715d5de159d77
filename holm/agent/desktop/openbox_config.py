"""openbox's configuration in a box: the system's, less the key bindings that would stop an
agent or hide its screen.

Debian's rc.xml binds `Print` and `alt+Print` to scrot and `super+e` to a file manager, none
of them in a box: openbox then puts up a modal "failed to execute" dialog that takes the
keyboard. `super+d` hides every window, and the keys that go to another of its four
desktops leave the screen empty. A box keeps one desktop and the bindings that move
between and close its windows (alt+Tab, alt+F4), as a person's desktop has them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

NS = "http://openbox.org/3.4/rc"
SYSTEM_RC = Path("/etc/xdg/openbox/rc.xml")
# The actions a key binding may do in a box (and those they nest: focus, raise, unshade).
KEPT_ACTIONS = frozenset(
    {
        "Close",
        "NextWindow",
        "PreviousWindow",
        "DirectionalCycleWindows",
        "Focus",
        "Raise",
        "Unshade",
    }
)


def _tag(name: str) -> str:
    return f"{{{NS}}}{name}"


def box_rc(system: str) -> str:
    """`system` (an openbox rc.xml) with one desktop and only the key bindings of
    KEPT_ACTIONS."""
    ET.register_namespace("", NS)
    root = ET.fromstring(system)
    keyboard = root.find(_tag("keyboard"))
    if keyboard is not None:
        for bind in keyboard.findall(_tag("keybind")):
            actions = {action.get("name") for action in bind.iter(_tag("action"))}
            if not actions <= KEPT_ACTIONS:
                keyboard.remove(bind)
    number = root.find(f"{_tag('desktops')}/{_tag('number')}")
    if number is not None:
        number.text = "1"
    return ET.tostring(root, encoding="unicode")


def write_box_rc(run_dir: Path, screen: int, system: Path = SYSTEM_RC) -> Path | None:
    """Write the box's rc.xml for a screen; None when the system has none to start from
    (openbox's built-in defaults bind no programs)."""
    try:
        text = system.read_text()
    except FileNotFoundError:
        return None
    path = run_dir / f"openbox-{screen}-rc.xml"
    path.write_text(box_rc(text))
    return path
