"""MIT-SHM image reads for python-xlib, which has no binding for it: the X server writes a
capture straight into a System V shared memory segment the agent maps, so a 4 MB frame
does not travel through the socket and python-xlib's reader (which copies it many times).
"""

from __future__ import annotations

import ctypes
from typing import Any

from Xlib import X
from Xlib.display import Display
from Xlib.error import CatchError
from Xlib.protocol import rq

_IPC_PRIVATE = 0
_IPC_CREAT = 0o1000
_IPC_RMID = 0
_SHM_ATTACH, _SHM_DETACH, _SHM_GET_IMAGE = 1, 2, 4

_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
_libc.shmget.restype = ctypes.c_int
_libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
_libc.shmat.restype = ctypes.c_void_p
_libc.shmdt.argtypes = [ctypes.c_void_p]
_libc.shmctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]


class _Attach(rq.Request):  # type: ignore[misc]
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(_SHM_ATTACH),
        rq.RequestLength(),
        rq.Card32("shmseg"),
        rq.Card32("shmid"),
        rq.Bool("read_only"),
        rq.Pad(3),
    )


class _Detach(rq.Request):  # type: ignore[misc]
    _request = rq.Struct(
        rq.Card8("opcode"), rq.Opcode(_SHM_DETACH), rq.RequestLength(), rq.Card32("shmseg")
    )


class _GetImage(rq.ReplyRequest):  # type: ignore[misc]
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(_SHM_GET_IMAGE),
        rq.RequestLength(),
        rq.Drawable("drawable"),
        rq.Int16("x"),
        rq.Int16("y"),
        rq.Card16("width"),
        rq.Card16("height"),
        rq.Card32("plane_mask"),
        rq.Card8("format"),
        rq.Pad(3),
        rq.Card32("shmseg"),
        rq.Card32("offset"),
    )
    _reply = rq.Struct(
        rq.ReplyCode(),
        rq.Card8("depth"),
        rq.Card16("sequence_number"),
        rq.ReplyLength(),
        rq.Card32("visual"),
        rq.Card32("size"),
        rq.Pad(16),
    )


class SharedImage:
    """A shared segment of `size` bytes attached to the X server of `conn`."""

    def __init__(self, conn: Display, size: int) -> None:
        ext = conn.query_extension("MIT-SHM")
        if ext is None or not ext.present:
            raise OSError("the X server has no MIT-SHM")
        self.conn = conn
        self.opcode = ext.major_opcode
        self.size = size
        self.shmid = _libc.shmget(_IPC_PRIVATE, size, _IPC_CREAT | 0o600)
        if self.shmid < 0:
            raise OSError(ctypes.get_errno(), "shmget failed")
        address = _libc.shmat(self.shmid, None, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            _libc.shmctl(self.shmid, _IPC_RMID, None)
            raise OSError(ctypes.get_errno(), "shmat failed")
        self.address: int = address
        self.shmseg = conn.display.allocate_resource_id()
        refused = CatchError()
        try:
            _Attach(
                conn.display,
                refused,
                opcode=self.opcode,
                shmseg=self.shmseg,
                shmid=self.shmid,
                read_only=False,
            )
            conn.sync()
        finally:
            # Marked for removal now: the segment goes when the agent and the X server have
            # both let go of it, even if the agent is killed.
            _libc.shmctl(self.shmid, _IPC_RMID, None)
        if refused.get_error() is not None:
            _libc.shmdt(ctypes.c_void_p(self.address))
            raise OSError(f"the X server could not attach the segment: {refused.get_error()}")
        self.root: Any = conn.screen().root

    def get_image(self, region: Any) -> bytes:
        """The ZPixmap bytes of `region` of the root window (32 bits a pixel)."""
        length = region.width * region.height * 4
        if length > self.size:
            raise ValueError(f"a region of {length} bytes is over the segment of {self.size}")
        _GetImage(
            display=self.conn.display,
            opcode=self.opcode,
            drawable=self.root,
            x=region.x,
            y=region.y,
            width=region.width,
            height=region.height,
            plane_mask=0xFFFFFFFF,
            format=X.ZPixmap,
            shmseg=self.shmseg,
            offset=0,
        )
        return ctypes.string_at(self.address, length)

    def close(self) -> None:
        try:
            _Detach(display=self.conn.display, opcode=self.opcode, shmseg=self.shmseg)
            self.conn.sync()
        except Exception:
            pass
        _libc.shmdt(ctypes.c_void_p(self.address))
