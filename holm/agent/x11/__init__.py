"""One screen's X server as the agent drives it: input through XTEST, keys, windows,
the clipboard, the DAMAGE watch, MIT-SHM reads."""
