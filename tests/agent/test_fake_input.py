"""fake_input.py packs XTEST's FakeInput itself: the bytes must be python-xlib's own, and
requests queued around it must keep their serials (a reply after it still matches)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from Xlib import X
from Xlib.display import Display
from Xlib.ext.xtest import FakeInput as XlibFakeInput

from holm.agent.x11.fake_input import LAYOUT, FakeInput
from holm.agent.x11.fake_input import MINOR as MINOR_OPCODE

from .own_screen import display, painter

__all__ = ["display", "painter"]  # fixtures

KINDS = [X.KeyPress, X.KeyRelease, X.ButtonPress, X.ButtonRelease, X.MotionNotify]
INT16 = st.integers(-(2**15), 2**15 - 1)


@given(
    opcode=st.integers(128, 255),
    kind=st.sampled_from(KINDS),
    detail=st.integers(0, 255),
    x=INT16,
    y=INT16,
)
def test_the_bytes_are_python_xlibs(opcode: int, kind: int, detail: int, x: int, y: int) -> None:
    ours = LAYOUT.pack(opcode, MINOR_OPCODE, LAYOUT.size // 4, kind, detail, 0, 0, x, y)
    theirs = XlibFakeInput._request.to_binary(
        opcode=opcode, event_type=kind, detail=detail, time=X.CurrentTime, root=X.NONE, x=x, y=y
    )
    assert ours == theirs


def test_the_x_server_does_them_in_order_with_python_xlibs_requests(painter: Display) -> None:
    events = FakeInput(painter)
    root = painter.screen().root
    for x in range(10, 110, 10):
        events.send(X.MotionNotify, x=x, y=x // 2)
        # A request with a reply between two of ours: its serial must still match.
        pointer = root.query_pointer()
        assert (pointer.root_x, pointer.root_y) == (x, x // 2)
    painter.sync()
