"""The in-box agent (`python3 -m holm.adapters.agent`) and its client, `AgentDesktop`.

The agent runs inside every box: it brings the box's desktop up (Xvfb, openbox, Chromium
and a viewer socket on each screen, with an x11vnc per viewer) and does everything the
engine asks of the box over a Unix socket (protocol.py). It imports only
`holm.adapters.agent.*`, `holm.adapters.base`, `holm.wire.*` and `holm.errors`, with
msgspec, python-xlib and pillow, so that it runs with the system Python of a box image (it
reaches Chromium's DevTools with the standard library: devtools_wire.py).
"""

from holm.adapters.agent.client import AgentDesktop

__all__ = ["AgentDesktop"]
