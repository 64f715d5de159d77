"""The screen's pixels through wlr-screencopy, in process, into a shared memory buffer.

A watcher thread asks the compositor for the output again and again with
`copy_with_damage`: the compositor answers each only once something was drawn since the
last, so a still screen costs nothing, and every answer is a change (counted, as X11's
DAMAGE counts them: damage_watch.py). The last picture is kept; a frame is read from it,
and its hash is made once per picture, so a screen nobody drew on since is answered
without reading a pixel.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
from collections.abc import Callable
from typing import Any

from pywayland.protocol.wayland import WlShm

from holm.agent.frames.tiles import READS
from holm.agent.wayland.connection import Connection

# wl_shm's formats the agent takes: both are BGRX in memory on a little-endian machine.
BGRX_FORMATS = (WlShm.format.xrgb8888.value, WlShm.format.argb8888.value)


class Picture:
    """One picture of the screen: its pixels (BGRX, row by row) and its serial."""

    __slots__ = ("data", "serial")

    def __init__(self, data: bytes, serial: int) -> None:
        self.data = data
        self.serial = serial


class Capture:
    """Owns its connection; `run` is the watcher thread's body."""

    def __init__(self, socket_path: str, width: int, height: int, on_change: Callable[[], None]):
        self.conn = Connection(socket_path, ("wl_shm", "wl_output", "zwlr_screencopy_manager_v1"))
        self.width = width
        self.height = height
        self._on_change = on_change
        self.picture: Picture | None = None
        self.first = threading.Event()
        self._stop = False
        self._serial = 0
        self._buffer: Any = None
        self._map: mmap.mmap | None = None
        self._stride = 0
        self.failure: str | None = None
        self._thread = threading.Thread(target=self.run, name="wayland-capture", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _ensure_buffer(self, fmt: int, width: int, height: int, stride: int) -> Any:
        if self._buffer is not None and self._stride == stride:
            return self._buffer
        size = stride * height
        fd = os.memfd_create("holm-frame", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, size)
            self._map = mmap.mmap(fd, size)
            pool = self.conn["wl_shm"].create_pool(fd, size)
        finally:
            os.close(fd)
        self._buffer = pool.create_buffer(0, width, height, stride, fmt)
        pool.destroy()
        self._stride = stride
        return self._buffer

    def run(self) -> None:
        try:
            while not self._stop:
                self._copy_once()
        except Exception as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
        finally:
            self.first.set()

    def _copy_once(self) -> None:
        """One copy of the output: the first at once, every later one once something
        was drawn since the last (`copy_with_damage`)."""
        state: dict[str, Any] = {}

        def on_buffer(_f: Any, fmt: int, width: int, height: int, stride: int) -> None:
            if fmt in BGRX_FORMATS and "buffer" not in state:
                state["buffer"] = (fmt, width, height, stride)

        frame = self.conn["zwlr_screencopy_manager_v1"].capture_output(0, self.conn["wl_output"])
        frame.dispatcher["buffer"] = on_buffer
        frame.dispatcher["ready"] = lambda *_a: state.__setitem__("ready", True)
        frame.dispatcher["failed"] = lambda *_a: state.__setitem__("failed", True)
        # The buffer offers come first (version 3 ends them with buffer_done): a roundtrip
        # has them all.
        self.conn.roundtrip()
        if "buffer" not in state:
            raise RuntimeError("the compositor offers no BGRX buffer for screencopy")
        fmt, width, height, stride = state["buffer"]
        buffer = self._ensure_buffer(fmt, width, height, stride)
        if self.picture is None:
            frame.copy(buffer)
        else:
            frame.copy_with_damage(buffer)
        while not self._stop and "ready" not in state and "failed" not in state:
            self.conn.display.dispatch(block=True)
        frame.destroy()
        if "ready" in state and not self._stop:
            self._keep(width, height, stride)

    def _keep(self, width: int, height: int, stride: int) -> None:
        assert self._map is not None
        READS.pixels += width * height
        if stride == width * 4:
            data = self._map[: stride * height]
        else:
            rows = [self._map[r * stride : r * stride + width * 4] for r in range(height)]
            data = b"".join(rows)
        self._serial += 1
        self.picture = Picture(data, self._serial)
        self.first.set()
        self._on_change()

    def close(self) -> None:
        self._stop = True
        # The watcher may be blocked in a dispatch for damage that never comes: the daemon
        # thread ends with the agent.
        with contextlib.suppress(Exception):
            if self._map is not None and not self._thread.is_alive():
                self._map.close()
