"""The box's openbox configuration, as written from the system's rc.xml."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from holm.agent.desktop import openbox_config as oc

SYSTEM = f"""<openbox_config xmlns="{oc.NS}">
  <mouse>
    <context name="Client">
      <mousebind button="Left" action="Press">
        <action name="Focus"/><action name="Raise"/>
      </mousebind>
      <mousebind button="A-Left" action="Drag"><action name="Move"/></mousebind>
    </context>
    <context name="Titlebar">
      <mousebind button="Left" action="Press">
        <action name="Focus"/><action name="Raise"/>
      </mousebind>
    </context>
  </mouse>
</openbox_config>"""


def _binds(rc: str, context: str) -> list[ET.Element]:
    root = ET.fromstring(rc)
    found = [c for c in root.iter(oc._tag("context")) if c.get("name") == context]
    return list(found[0].iter(oc._tag("mousebind")))


def test_a_press_in_a_window_focuses_and_raises_it_only_without_the_focus() -> None:
    rc = oc.box_rc(SYSTEM)
    press, drag = _binds(rc, "Client")
    (condition,) = list(press)
    assert condition.get("name") == "If"
    assert condition.findtext(oc._tag("focused")) == "no"
    then = condition.find(oc._tag("then"))
    assert then is not None
    assert [a.get("name") for a in then] == ["Focus", "Raise"]
    # Other bindings, and the frame's, are as the system has them.
    assert [a.get("name") for a in drag] == ["Move"]
    (title,) = _binds(rc, "Titlebar")
    assert [a.get("name") for a in title] == ["Focus", "Raise"]


def test_the_system_rc_is_rewritten_so() -> None:
    """The rc.xml openbox reads in a box: Debian's, its Client presses wrapped."""
    rc = oc.box_rc(oc.SYSTEM_RC.read_text())
    presses = [b for b in _binds(rc, "Client") if b.get("action") == "Press"]
    assert presses and all(
        [a.get("name") for a in b] == ["If"] and b.find(f".//{oc._tag('focused')}") is not None
        for b in presses
    )
