"""The in-box agent, `python3 -m holm.agent`: the program that runs inside every box.

It brings the box's desktop up (Xvfb, openbox, Chromium and a viewer socket on each
screen, with an x11vnc per viewer) and does everything the engine asks of the box over a
Unix socket (the protocol is `holm.wire.agent_protocol`, which both sides speak). It imports
only `holm.agent.*`, `holm.wire.*` and `holm.errors` (an import-linter contract holds it),
with msgspec, python-xlib and pillow, so that it runs with the system Python of a box
image (it reaches Chromium's DevTools with the standard library: browser/devtools_wire.py).

Its wings, by what they do:

- `x11/`: one screen's X connections: input through XTEST, keys, windows, the clipboard,
  the DAMAGE watch, MIT-SHM reads;
- `frames/`: the tile hash grid, capture, PNG bands, other encodings;
- `browser/`: the screen's Chromium through DevTools: pages, tabs, the DevTools bridge;
- `widgets/`: native widgets through AT-SPI, and the accessibility bus;
- `desktop/`: bringing the desktop up, its features, the agent's children, `exec`,
  screen recording, the viewer socket, the catalog's applications.

The host side (the client, `holm.adapters.agent_desktop.AgentDesktop`, and the command line
every runtime starts it with, `holm.adapters.agent_command`) lives in `holm.adapters`.
"""
