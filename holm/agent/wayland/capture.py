"""The screen's pixels through wlr-screencopy, in process, into shared memory buffers.

A watcher thread asks the compositor for the output again and again with
`copy_with_damage`: the compositor answers each only once something was drawn since the
last, so a still screen costs nothing, and every answer is a change (counted, as X11's
DAMAGE counts them: damage_watch.py). The compositor writes each picture into one of a
ring of buffers (RING), never the one holding the last picture, and the watcher copies
nothing: a picture is read out of its buffer only when a frame asks for it (`read`), once
per picture (its hash is kept by the screen), so a screen nobody drew on since is answered
without reading a pixel, and a screen that animates costs the agent nothing between frames.
"""

from __future__ import annotations

import mmap
import os
import select
import threading
from collections.abc import Callable
from typing import Any

from pywayland.protocol.wayland import WlShm

from holm.agent.frames.tiles import READS
from holm.agent.wayland.connection import Connection

# wl_shm's formats the agent takes: both are BGRX in memory on a little-endian machine.
BGRX_FORMATS = (WlShm.format.xrgb8888.value, WlShm.format.argb8888.value)
# Buffers the compositor writes into in turn: the last picture's is never written next, so
# a read of it is overwritten only after two more pictures (and is then read again).
RING = 3
READ_TRIES = 8
# How often the watcher, waiting for a picture, looks whether it is to stop.
STOP_POLL_S = 0.2


class Picture:
    """One picture of the screen: its pixels (BGRX, row by row) and its serial."""

    __slots__ = ("data", "serial")

    def __init__(self, data: bytes, serial: int) -> None:
        self.data = data
        self.serial = serial


class _Buffer:
    def __init__(self, proxy: Any, pixels: mmap.mmap) -> None:
        self.proxy = proxy
        self.pixels = pixels
        # Bumped when the compositor is asked to write into it (read it before and after
        # a copy out: equal, and the copy is whole).
        self.generation = 0


class Capture:
    """Owns its connection; `run` is the watcher thread's body."""

    def __init__(self, socket_path: str, width: int, height: int, on_change: Callable[[], None]):
        self.conn = Connection(socket_path, ("wl_shm", "wl_output", "zwlr_screencopy_manager_v1"))
        self.width = width
        self.height = height
        self._on_change = on_change
        self.first = threading.Event()
        self._stop = False
        # The serial of the last picture and the buffer it is in.
        self.serial = 0
        self._latest: int | None = None
        self._ring: list[_Buffer] = []
        self._shape: tuple[int, int, int, int] | None = None
        # The last picture read out, kept for the next reader of the same serial.
        self._read: Picture | None = None
        self._read_lock = threading.Lock()
        self.failure: str | None = None
        self._thread = threading.Thread(target=self.run, name="wayland-capture", daemon=True)

    @property
    def has_picture(self) -> bool:
        return self._latest is not None

    def start(self) -> None:
        self._thread.start()

    def _make_ring(self, fmt: int, width: int, height: int, stride: int) -> None:
        if self._shape == (fmt, width, height, stride):
            return
        size = stride * height
        fd = os.memfd_create("holm-frames", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, size * RING)
            pool = self.conn["wl_shm"].create_pool(fd, size * RING)
            self._ring = [
                _Buffer(
                    pool.create_buffer(i * size, width, height, stride, fmt),
                    mmap.mmap(fd, size, offset=i * size),
                )
                for i in range(RING)
            ]
        finally:
            os.close(fd)
        pool.destroy()
        self._shape = (fmt, width, height, stride)

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
        if self._shape is None:
            # The buffer offers come first (version 3 ends them with buffer_done): a
            # roundtrip has them all. Later frames of the output offer the same, and are
            # copied without waiting for the offer (the compositor makes it at once).
            self.conn.roundtrip()
            if "buffer" not in state:
                raise RuntimeError("the compositor offers no BGRX buffer for screencopy")
            self._make_ring(*state["buffer"])
        latest = self._latest
        into = 0 if latest is None else (latest + 1) % RING
        target = self._ring[into]
        target.generation += 1
        if latest is None:
            frame.copy(target.proxy)
        else:
            frame.copy_with_damage(target.proxy)
        self.conn.flush()
        fd = self.conn.display.get_fd()
        while not self._stop and "ready" not in state and "failed" not in state:
            # A blocking dispatch would wait for the next drawing, maybe for ever: the
            # watcher waits for its connection to be readable, a little at a time.
            readable, _, _ = select.select([fd], [], [], STOP_POLL_S)
            if readable:
                self.conn.display.dispatch(block=True)
        frame.destroy()
        if "buffer" in state and state["buffer"] != self._shape:
            # The output changed (its size): the next copy makes buffers for it.
            self._shape = None
        if "ready" in state and not self._stop:
            self.serial += 1
            self._latest = into
            self.first.set()
            self._on_change()

    def read(self) -> Picture:
        """The last picture, read out of its buffer (any thread; once per picture)."""
        with self._read_lock:
            for _ in range(READ_TRIES):
                latest, serial = self._latest, self.serial
                kept = self._read
                if kept is not None and kept.serial == serial:
                    return kept
                if latest is None or self._shape is None:
                    raise RuntimeError("no picture yet")
                buffer = self._ring[latest]
                generation = buffer.generation
                _, width, height, stride = self._shape
                if stride == width * 4:
                    data = buffer.pixels[: stride * height]
                else:
                    rows = (
                        buffer.pixels[r * stride : r * stride + width * 4] for r in range(height)
                    )
                    data = b"".join(rows)
                READS.pixels += width * height
                if buffer.generation == generation and self.serial == serial:
                    self._read = Picture(data, serial)
                    return self._read
            raise RuntimeError("the screen changed faster than its pictures could be read")

    def close(self) -> None:
        self._stop = True
        if self._thread.is_alive():
            self._thread.join(STOP_POLL_S * 5)
        if self._thread.is_alive():
            # Stuck in the compositor's socket: its proxies stay (freeing them under it
            # would crash), and go with the process.
            return
        self.conn.close(tuple(b.proxy for b in self._ring))
        for buffer in self._ring:
            buffer.pixels.close()
