"""sway's IPC (i3's protocol) on its socket: a message is "i3-ipc", its payload's length
and its type (native-endian 32-bit each), then the payload, JSON; so is each answer. A
dozen lines do what the agent needs (commands, the tree, the outputs) without a client
library and its event thread."""

from __future__ import annotations

import json
import socket
import struct
import threading
from typing import Any

MAGIC = b"i3-ipc"
HEADER = struct.Struct("=6sII")
RUN_COMMAND, GET_WORKSPACES, GET_OUTPUTS, GET_TREE = 0, 1, 3, 4


class SwayIpc:
    """One connection; its calls may come from any thread (one at a time)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(10)
        self._sock.connect(path)
        self._lock = threading.Lock()

    def _call(self, kind: int, payload: str = "") -> Any:
        body = payload.encode()
        with self._lock:
            self._sock.sendall(HEADER.pack(MAGIC, len(body), kind) + body)
            head = self._read(HEADER.size)
            magic, size, _ = HEADER.unpack(head)
            if magic != MAGIC:
                raise ConnectionError("sway's IPC answered out of step")
            return json.loads(self._read(size))

    def _read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self._sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("sway's IPC hung up")
            data += chunk
        return data

    def command(self, text: str) -> list[dict[str, Any]]:
        answers: list[dict[str, Any]] = self._call(RUN_COMMAND, text)
        return answers

    def tree(self) -> dict[str, Any]:
        found: dict[str, Any] = self._call(GET_TREE)
        return found

    def outputs(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self._call(GET_OUTPUTS)
        return found

    def workspaces(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self._call(GET_WORKSPACES)
        return found

    def close(self) -> None:
        self._sock.close()


def leaves(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The windows of a tree (its views: nodes with a pid), tiled and floating, in order;
    the scratchpad's too (a minimised window is there)."""
    found: list[dict[str, Any]] = []
    children = node.get("nodes", []) + node.get("floating_nodes", [])
    if not children and node.get("pid") and node.get("type") in ("con", "floating_con"):
        found.append(node)
    for child in children:
        found += leaves(child)
    return found


SUBSCRIBE = 2
# An event's type has the high bit set; window events are type 3 among them.
EVENT_BIT = 0x80000000


class WindowEvents:
    """A count of sway's window events (new, close, focus, title, move, …), as the X11
    screen's window watch counts property changes: what the tab listing and the window
    listing are kept by. Its own connection, read by a thread of its own."""

    def __init__(self, path: str) -> None:
        self.changes = 0
        self._ipc = SwayIpc(path)
        self._ipc._sock.settimeout(None)
        answer = self._ipc._call(SUBSCRIBE, json.dumps(["window", "workspace"]))
        if not answer.get("success"):
            raise ConnectionError("sway refused the window events' subscription")
        self._thread = threading.Thread(target=self._run, name="sway-events", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while True:
                head = self._ipc._read(HEADER.size)
                _, size, kind = HEADER.unpack(head)
                self._ipc._read(size)
                if kind & EVENT_BIT:
                    self.changes += 1
        except OSError:
            return

    def close(self) -> None:
        self._ipc.close()
