"""XTEST `FakeInput` requests, packed at once and queued on a python-xlib connection.

python-xlib builds each request as an object from its field list, about 16 µs for one
`fake_input` on this machine: 10 characters typed are 20 of them, more than the X server
takes to do them. The request is a fixed 36 bytes, so it is packed here with one `struct`
and handed to the connection's queue the way python-xlib's own requests are (`send_request`
gives it its serial), so replies and errors of the requests around it are matched as before.
tests/agent/test_fake_input.py checks the bytes against python-xlib's own packing.
"""

from __future__ import annotations

import struct

from Xlib.display import Display

# The layout of Xlib/ext/xtest.py's FakeInput: major opcode, minor 2, length 9 (words),
# type, detail, 2 pad, time, root, 8 pad, x, y, 8 pad; in the connection's (native) order.
LAYOUT = struct.Struct("=BBHBBxxIIxxxxxxxxhhxxxxxxxx")
MINOR = 2
LENGTH = LAYOUT.size // 4


class _Packed:
    """What a connection's queue holds of a request: its bytes and serial."""

    __slots__ = ("_binary", "_serial")

    def __init__(self, binary: bytes) -> None:
        self._binary = binary
        self._serial: int | None = None

    def _set_error(self, error: object) -> int:
        # As a python-xlib request with no `onerror`: the display's handler has it.
        return 0


class FakeInput:
    def __init__(self, conn: Display) -> None:
        self._queue = conn.display
        self.opcode = int(conn.display.get_extension_major("XTEST"))

    def send(self, kind: int, detail: int = 0, x: int = 0, y: int = 0) -> None:
        """Queue one event of `kind` (X.KeyPress, X.MotionNotify, …) at the current time
        on the default root; it goes out with the connection's next flush."""
        packed = LAYOUT.pack(self.opcode, MINOR, LENGTH, kind, detail, 0, 0, x, y)
        self._queue.send_request(_Packed(packed), False)


__all__ = ["LAYOUT", "FakeInput"]
