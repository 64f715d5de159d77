"""The Wayland wing of the agent: a screen is a headless sway (sway_up.py), its input a
virtual pointer and keyboard (input.py, keymap.py), its frames wlr-screencopy's with damage
(capture.py), its windows sway's IPC (windows.py), behind the X11 screen's interface
(screen.py)."""
