"""fdatasync without a thread: Linux AIO's `IOCB_CMD_FDSYNC`, its end told through an
eventfd that the event loop watches.

The local store's commit waited for its fdatasync on a thread of its own (local.py), which
cost a wake-up of that thread and a wake-up of the loop after it, and the thread had to get
the GIL back in between: on this machine's VMs, with Chromium drawing a click's answer on
the other core, 0.4 to 0.9 ms beside the disk's 0.3 (bench/click_path.py's timeline). Here
the loop submits the fdatasync (`io_submit` returns at once; a kernel worker does it) and
goes on; the eventfd wakes the loop when the disk is done.

Only the fdatasync goes this way: the lines are written to the file first, on the loop, as
a write of a few hundred bytes to the page cache, and nothing that can wait on the disk
stays on the loop. Where AIO is missing (not Linux, no `io_setup`), `AioSync.open` gives
None and the store keeps its thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import sys

log = logging.getLogger(__name__)

# x86-64 and arm64 system call numbers.
_SYSCALLS = {
    "x86_64": (206, 207, 209, 208),
    "aarch64": (0, 1, 2, 4),
}
_IOCB_CMD_FDSYNC = 3
_IOCB_FLAG_RESFD = 1
# Commits are one at a time (local.py's writer): a few in flight is plenty.
_MOST_IN_FLIGHT = 8


class _Iocb(ctypes.Structure):
    """`struct iocb` of <linux/aio_abi.h> (little-endian)."""

    _fields_ = [
        ("aio_data", ctypes.c_uint64),
        ("aio_key", ctypes.c_uint32),
        ("aio_rw_flags", ctypes.c_int32),
        ("aio_lio_opcode", ctypes.c_uint16),
        ("aio_reqprio", ctypes.c_int16),
        ("aio_fildes", ctypes.c_uint32),
        ("aio_buf", ctypes.c_uint64),
        ("aio_nbytes", ctypes.c_uint64),
        ("aio_offset", ctypes.c_int64),
        ("aio_reserved2", ctypes.c_uint64),
        ("aio_flags", ctypes.c_uint32),
        ("aio_resfd", ctypes.c_uint32),
    ]


class _Event(ctypes.Structure):
    """`struct io_event`."""

    _fields_ = [
        ("data", ctypes.c_uint64),
        ("obj", ctypes.c_uint64),
        ("res", ctypes.c_int64),
        ("res2", ctypes.c_int64),
    ]


class NotSubmitted(OSError):
    """The kernel took no fdatasync (the caller does it another way)."""


class AioSync:
    """fdatasyncs submitted from one event loop and told back to it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, libc: ctypes.CDLL, calls: tuple[int, ...]):
        self._loop = loop
        self._libc = libc
        self._setup, self._destroy, self._submit, self._getevents = calls
        self._ctx = ctypes.c_ulong(0)
        if libc.syscall(self._setup, _MOST_IN_FLIGHT, ctypes.byref(self._ctx)) != 0:
            raise OSError(ctypes.get_errno(), "io_setup failed")
        self._eventfd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        # Each fdatasync in flight: its future, and its iocb, kept alive until it is done.
        self._waiting: dict[int, tuple[asyncio.Future[None], _Iocb]] = {}
        self._next = 0
        loop.add_reader(self._eventfd, self._told)

    @classmethod
    def open(cls, loop: asyncio.AbstractEventLoop) -> AioSync | None:
        """An `AioSync` on `loop`, or None where Linux AIO cannot be had."""
        calls = _SYSCALLS.get(os.uname().machine)
        if sys.platform != "linux" or calls is None or not hasattr(os, "eventfd"):
            return None
        try:
            return cls(loop, ctypes.CDLL(None, use_errno=True), calls)
        except OSError as exc:
            log.info("no Linux AIO (%s): the trace store fsyncs in a thread", exc)
            return None

    async def fdatasync(self, fd: int) -> None:
        """fdatasync(fd), waited for without blocking the loop; `NotSubmitted` if the
        kernel refused to take it."""
        await self.submit(fd)

    def submit(self, fd: int) -> asyncio.Future[None]:
        """Start fdatasync(fd) now; the future ends when the disk is done (`OSError` if
        the fdatasync failed). `NotSubmitted`, at once, if the kernel refused to take it."""
        if len(self._waiting) >= _MOST_IN_FLIGHT:
            raise NotSubmitted(0, "too many fdatasyncs in flight")
        self._next += 1
        key = self._next
        iocb = _Iocb(
            aio_data=key,
            aio_lio_opcode=_IOCB_CMD_FDSYNC,
            aio_fildes=fd,
            aio_flags=_IOCB_FLAG_RESFD,
            aio_resfd=self._eventfd,
        )
        done: asyncio.Future[None] = self._loop.create_future()
        self._waiting[key] = (done, iocb)
        pointers = (ctypes.POINTER(_Iocb) * 1)(ctypes.pointer(iocb))
        if self._libc.syscall(self._submit, self._ctx, 1, pointers) != 1:
            del self._waiting[key]
            raise NotSubmitted(ctypes.get_errno(), "io_submit took no fdatasync")
        # The kernel finishes an fdatasync it took whatever happens here: a caller that
        # stops waiting cancels `done`, and the end is told and dropped (`_told`).
        return done

    def _told(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.eventfd_read(self._eventfd)
        events = (_Event * _MOST_IN_FLIGHT)()
        while self._waiting:
            count = self._libc.syscall(self._getevents, self._ctx, 0, _MOST_IN_FLIGHT, events, None)
            if count <= 0:
                return
            for event in events[:count]:
                done, _ = self._waiting.pop(event.data, (None, None))
                if done is not None and not done.done():
                    if event.res < 0:
                        done.set_exception(OSError(-event.res, os.strerror(-event.res)))
                    else:
                        done.set_result(None)

    def close(self) -> None:
        """Stop watching and free the kernel's context (nothing may be in flight)."""
        self._loop.remove_reader(self._eventfd)
        os.close(self._eventfd)
        self._libc.syscall(self._destroy, self._ctx)


__all__ = ["AioSync", "NotSubmitted"]
