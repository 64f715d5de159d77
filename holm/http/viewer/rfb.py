"""The client half of RFB (RFC 6143), read as it passes the relay: what a viewer sends to
x11vnc, cut into whole messages so that a view-only relay can drop input and a control
relay can see it.

The handshake: the client's `ProtocolVersion` (12 bytes); from 3.7 on, the security type
it chose (1 byte; x11vnc runs `-nopw`, so it offers None (1) only, and any other choice is
refused here rather than parsed); then `ClientInit` (1 byte). After it, client messages:

    0 SetPixelFormat            20 bytes                       passes
    2 SetEncodings              4 + 4·n                        passes
    3 FramebufferUpdateRequest  10                             passes
    4 KeyEvent                  8                              input
    5 PointerEvent              6                              input
    6 ClientCutText             8 + |length| (s32; negative:    input
                                extended clipboard)
  150 EnableContinuousUpdates   10                             passes
  250 xvp                       4                              input (reboots, shutdowns)
  251 SetDesktopSize            8 + 16·n                       input (resizes the screen)

A message of another type cannot be cut (its length is not known), so the stream is
refused (`RfbError`): a view relay never passes what it cannot read.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass

INPUT_TYPES = frozenset({4, 5, 6, 250, 251})
MAX_CUT_TEXT = 1 << 20
MAX_PENDING = 1 << 21
# Three ASCII digits each, as LibVNCServer reads them (`RFB %03d.%03d\n`): Python's int()
# reads more ("0_7" is 7 to it, 0 to x11vnc), and a version the two sides read apart puts
# them one handshake byte apart, where a byte the relay takes for the handshake starts an
# input message for x11vnc.
_VERSION = re.compile(rb"RFB \d{3}\.\d{3}\n")


class RfbError(ValueError):
    pass


@dataclass(frozen=True)
class Message:
    # "handshake" for the bytes before the first client message, else the message type.
    kind: str | int
    data: bytes

    @property
    def is_input(self) -> bool:
        return isinstance(self.kind, int) and self.kind in INPUT_TYPES


@dataclass(frozen=True)
class KeyEvent:
    down: bool
    keysym: int


@dataclass(frozen=True)
class PointerEvent:
    buttons: int
    x: int
    y: int


def decode_input(message: Message) -> KeyEvent | PointerEvent | None:
    if message.kind == 4:
        down, keysym = struct.unpack(">BxxI", message.data[1:8])
        return KeyEvent(bool(down), keysym)
    if message.kind == 5:
        buttons, x, y = struct.unpack(">BHH", message.data[1:6])
        return PointerEvent(buttons, x, y)
    return None


class ClientStream:
    """Feed it the client's bytes as they come; it gives back whole messages, holding a
    partial one (bounded by `MAX_PENDING`) until the rest arrives."""

    def __init__(self) -> None:
        self._pending = bytearray()
        # The handshake steps still to read: ("version" | "security" | "init").
        self._stage = "version"

    def feed(self, data: bytes) -> Iterator[Message]:
        self._pending += data
        if len(self._pending) > MAX_PENDING:
            raise RfbError("a client message larger than the relay takes")
        while True:
            message = self._next()
            if message is None:
                return
            yield message

    def _take(self, n: int) -> bytes:
        taken = bytes(self._pending[:n])
        del self._pending[:n]
        return taken

    def _next(self) -> Message | None:
        buf = self._pending
        if self._stage == "version":
            if len(buf) < 12:
                return None
            version = bytes(buf[:12])
            if _VERSION.fullmatch(version) is None:
                raise RfbError(f"not an RFB client: {version!r}")
            self._stage = "security" if int(version[8:11]) >= 7 else "init"
            return Message("handshake", self._take(12))
        if self._stage == "security":
            if len(buf) < 1:
                return None
            if buf[0] != 1:
                raise RfbError(f"security type {buf[0]} is not the None this relay passes")
            self._stage = "init"
            return Message("handshake", self._take(1))
        if self._stage == "init":
            if len(buf) < 1:
                return None
            self._stage = "messages"
            return Message("handshake", self._take(1))
        if not buf:
            return None
        size = self._size(buf)
        if size is None or len(buf) < size:
            return None
        kind = buf[0]
        return Message(kind, self._take(size))

    @staticmethod
    def _size(buf: bytearray) -> int | None:
        """The whole message's length, or None while its header is incomplete."""
        kind = buf[0]
        fixed = {0: 20, 3: 10, 4: 8, 5: 6, 150: 10, 250: 4}
        if kind in fixed:
            return fixed[kind]
        if kind == 2:
            if len(buf) < 4:
                return None
            count: int = struct.unpack(">H", buf[2:4])[0]
            return 4 + 4 * count
        if kind == 6:
            if len(buf) < 8:
                return None
            # Signed: a negative length is the Extended Clipboard form (noVNC sends it),
            # whose payload is that many bytes.
            length: int = abs(struct.unpack(">i", buf[4:8])[0])
            if length > MAX_CUT_TEXT:
                raise RfbError("a clipboard text larger than the relay takes")
            return 8 + length
        if kind == 251:
            if len(buf) < 8:
                return None
            return 8 + 16 * buf[6]
        raise RfbError(f"client message type {kind} is not one this relay can read")


__all__ = [
    "INPUT_TYPES",
    "ClientStream",
    "KeyEvent",
    "Message",
    "PointerEvent",
    "RfbError",
    "decode_input",
]
