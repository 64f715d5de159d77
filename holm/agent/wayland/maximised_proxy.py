"""Chromium's way to its sway: a relay that offers `xdg_wm_base` at version 1, so that
sway's tiled window is told it is *maximised*.

sway (1.7) never maximises a window: a tiled one gets the `tiled_*` states, which
xdg_wm_base has from version 2. Chromium takes a tiled window for a restored one and draws
its own frame around it (a shadow margin; docs/agent.md, "Wayland screens"), and in that
frame two antialiased pixels of its toolbar's top-left curve come out one of two ways
per start, as in a restored X11 window (desktop_up.CHROMIUM_WINDOW_FLAGS). To a client
of version 1, which has no tiled states, wlroots sends `maximized` in their place: the
window Chromium draws is then the X11 box's maximised one, the same at every start.

The relay reads every message's header (to find them in the stream) and changes one
thing: the version in `wl_registry.global` events that name `xdg_wm_base`. Everything else,
the file descriptors that go with the messages included, passes as it came. One
connection is two threads, one per direction; a direction ends when either side closes.
"""

from __future__ import annotations

import array
import contextlib
import logging
import os
import socket
import struct
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("holm.agent")

WM_BASE = b"xdg_wm_base"
WM_BASE_VERSION = 1
# wl_display is object 1; its request 1 is get_registry(new_id), and a registry's event 0
# is global(name: uint, interface: string, version: uint).
DISPLAY_ID = 1
GET_REGISTRY = 1
GLOBAL = 0
HEADER = struct.Struct("=II")
UINT = struct.Struct("=I")
# libwayland sends at most 28 descriptors with one sendmsg (MAX_FDS_OUT).
FDS_PER_SEND = 28
FD_SPACE = socket.CMSG_SPACE(64 * array.array("i").itemsize)
CHUNK = 65536


Look = Callable[[bytearray, int, int], None]


class Relay:
    """One client's connection and sway's for it, and what their two directions share:
    the ids of the client's registries (sway's globals come on them)."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self.registries: set[int] = set()
        self._running = 2
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        with self._lock:
            return self._running > 0

    def start(self) -> None:
        for source, sink, look in (
            (self.client, self.server, self.from_client),
            (self.server, self.client, self.from_server),
        ):
            threading.Thread(
                target=self._pump, args=(source, sink, look), name="wayland-proxy", daemon=True
            ).start()

    def _pump(self, source: socket.socket, sink: socket.socket, look: Look) -> None:
        try:
            pump(source, sink, look)
        finally:
            self.shutdown()
            # Closed under the lock, so a relay no longer `running` holds no socket.
            with self._lock:
                self._running -= 1
                if self._running == 0:
                    self.client.close()
                    self.server.close()

    def shutdown(self) -> None:
        """End both directions (each thread then closes what is its own)."""
        for sock in (self.client, self.server):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def from_client(self, buf: bytearray, start: int, end: int) -> None:
        obj, word = HEADER.unpack_from(buf, start)
        if obj == DISPLAY_ID and word & 0xFFFF == GET_REGISTRY and end - start >= 12:
            # Noted before the request goes on, so before sway can answer it.
            self.registries.add(UINT.unpack_from(buf, start + 8)[0])

    def from_server(self, buf: bytearray, start: int, end: int) -> None:
        obj, word = HEADER.unpack_from(buf, start)
        if obj not in self.registries or word & 0xFFFF != GLOBAL or end - start < 20:
            return
        (length,) = UINT.unpack_from(buf, start + 12)
        # The string's length counts its NUL; the version is the message's last word.
        if bytes(buf[start + 16 : start + 16 + length]).rstrip(b"\0") == WM_BASE:
            (offered,) = UINT.unpack_from(buf, end - 4)
            UINT.pack_into(buf, end - 4, min(offered, WM_BASE_VERSION))


def complete(buf: bytearray) -> list[tuple[int, int]]:
    """The (start, end) of each whole message at the head of `buf` (a message's size is
    in the upper half of its header's second word)."""
    found: list[tuple[int, int]] = []
    at = 0
    while len(buf) - at >= HEADER.size:
        size = HEADER.unpack_from(buf, at)[1] >> 16
        if size < HEADER.size or len(buf) - at < size:
            break
        found.append((at, at + size))
        at += size
    return found


def _receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    # CLOEXEC: a program the agent starts meanwhile must not inherit Chromium's buffers.
    data, ancillary, _, _ = sock.recvmsg(CHUNK, FD_SPACE, socket.MSG_CMSG_CLOEXEC)
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def _send(sock: socket.socket, data: bytes, fds: list[int]) -> None:
    """All of `data`, the descriptors `fds` with its first bytes; the descriptors are
    closed here, sent or not."""
    view = memoryview(data)
    pending = list(fds)
    try:
        while view:
            batch = pending[:FDS_PER_SEND]
            ancillary = (
                [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", batch).tobytes())]
                if batch
                else []
            )
            sent = sock.sendmsg([view[:CHUNK]], ancillary)
            del pending[: len(batch)]
            for fd in batch:
                os.close(fd)
            view = view[sent:]
    finally:
        for fd in pending:
            os.close(fd)


def pump(source: socket.socket, sink: socket.socket, look: Look) -> None:
    """Whole messages from `source` to `sink`, each shown to `look` (which may change
    it in place) first, until `source` ends or either fails."""
    buf = bytearray()
    fds: list[int] = []
    try:
        while True:
            data, received = _receive(source)
            if not data and not received:
                return
            buf += data
            fds += received
            whole = complete(buf)
            if not whole:
                continue
            for start, end in whole:
                look(buf, start, end)
            upto = whole[-1][1]
            # The descriptors are _send's to close from here on.
            out, fds = fds, []
            _send(sink, bytes(buf[:upto]), out)
            del buf[:upto]
    except OSError:
        return
    finally:
        for fd in fds:
            os.close(fd)


class MaximisedProxy:
    """The relay's socket at `path` (mode 0600: Chromium runs as the box's root, as the
    agent does), each connection to it relayed to sway's socket `upstream`."""

    def __init__(self, path: Path, upstream: str) -> None:
        self.path = path
        self.upstream = upstream
        path.unlink(missing_ok=True)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        path.chmod(0o600)
        self._listener.listen(16)
        self._relays: list[Relay] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name="wayland-proxy", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                server.connect(self.upstream)
            except OSError as exc:
                log.warning("the Wayland proxy could not reach sway: %s", exc)
                client.close()
                server.close()
                continue
            with self._lock:
                if self._closed:
                    client.close()
                    server.close()
                    return
                relay = Relay(client, server)
                # Those of connections that ended (a Chromium started again) go.
                self._relays = [r for r in self._relays if r.running] + [relay]
            relay.start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            relays, self._relays = self._relays, []
        # shutdown() wakes the thread blocked in accept() (close() alone would not).
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        for relay in relays:
            relay.shutdown()
        self._listener.close()
        self.path.unlink(missing_ok=True)
