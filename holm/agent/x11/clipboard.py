"""The clipboard and the primary selection of one screen, through X selections.

Setting the text makes the agent the selection's owner, with a hidden window of its own; a
thread answers the SelectionRequest events of applications that paste. Getting the text
asks the owner for UTF8_STRING (ConvertSelection) and reads the answer, following INCR
transfers. One thread does all of it on its own connection; other threads post requests to
it and wait on a future.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from Xlib import X, Xatom
from Xlib.display import Display
from Xlib.error import ConnectionClosedError
from Xlib.protocol import event

from holm.errors import BadRequest, ScreenUnavailable, Timeout
from holm.wire.values import Selection

log = logging.getLogger("holm.agent")

# A selection is answered in one property change; python-xlib has no BIG-REQUESTS, so one
# request stays under the core limit of 256 KiB.
MAX_TEXT_BYTES = 200_000
GET_TIMEOUT_S = 3.0
_NAMES: dict[Selection, str] = {"clipboard": "CLIPBOARD", "primary": "PRIMARY"}
_TEXT_TARGETS = ("UTF8_STRING", "TEXT", "text/plain;charset=utf-8", "text/plain")


class _Get:
    """A ConvertSelection in flight."""

    def __init__(self, future: Future[str], targets: list[int], deadline: float) -> None:
        self.future = future
        self.targets = targets
        self.deadline = deadline
        self.incr: bytearray | None = None


class ClipboardOwner:
    def __init__(self, display_name: str) -> None:
        self.conn = Display(display_name)
        self._atoms: dict[str, int] = {}
        screen = self.conn.screen()
        self.window = screen.root.create_window(
            -10, -10, 1, 1, 0, screen.root_depth, event_mask=X.PropertyChangeMask
        )
        self.window.set_wm_name("holm clipboard")
        self.conn.sync()
        self._owned: dict[int, bytes] = {}
        self._gets: dict[int, _Get] = {}
        self._posted: list[tuple[Callable[[Future[Any]], None], Future[Any]]] = []
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        self._stopped = False
        self.name = display_name
        self._thread = threading.Thread(
            target=self._loop, name=f"clipboard {display_name}", daemon=True
        )
        self._thread.start()

    def atom(self, name: str) -> int:
        if name not in self._atoms:
            self._atoms[name] = int(self.conn.intern_atom(name))
        return self._atoms[name]

    # Called from other threads

    def set(self, selection: Selection, text: str) -> None:
        data = text.encode("utf-8")
        if len(data) > MAX_TEXT_BYTES:
            raise BadRequest(f"clipboard text is limited to {MAX_TEXT_BYTES} bytes of UTF-8")
        self._post(lambda f: self._set(selection, data, f)).result(GET_TIMEOUT_S)

    def get(self, selection: Selection) -> str:
        future = self._post(lambda f: self._start_get(selection, f))
        text: str = future.result(GET_TIMEOUT_S + 1)
        return text

    def close(self) -> None:
        self._stopped = True
        os.write(self._wake_w, b"x")
        self._thread.join(2)
        os.close(self._wake_r)
        os.close(self._wake_w)
        # The display may be gone first (the box ends all its processes at once): closing a
        # dead connection must not end the agent before it has ended the rest in order.
        with contextlib.suppress(ConnectionClosedError, OSError):
            self.conn.close()

    def _post(self, work: Callable[[Future[Any]], None]) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._stopped:
                raise ScreenUnavailable(f"the clipboard of {self.name} is gone")
            self._posted.append((work, future))
        os.write(self._wake_w, b"x")
        return future

    # The selection thread

    def _loop(self) -> None:
        while not self._stopped:
            try:
                self._turn()
            except ConnectionClosedError as exc:
                log.warning("clipboard of %s: the display is gone (%s)", self.name, exc)
                self._stopped = True
            except Exception:
                log.exception("clipboard of %s", self.name)
                time.sleep(0.1)
        gone = ScreenUnavailable(f"the clipboard of {self.name} is gone")
        with self._lock:
            self._stopped = True
            posted, self._posted = self._posted, []
        for future in [f for _, f in posted] + [g.future for g in self._gets.values()]:
            if not future.done():
                future.set_exception(gone)
        self._gets.clear()

    def _turn(self) -> None:
        with self._lock:
            posted, self._posted = self._posted, []
        for work, future in posted:
            try:
                work(future)
            except Exception as exc:
                if not future.done():
                    future.set_exception(exc)
                if isinstance(exc, ConnectionClosedError):
                    raise
        while self.conn.pending_events():
            self._on_event(self.conn.next_event())
        now = time.monotonic()
        for prop, get in list(self._gets.items()):
            if now > get.deadline:
                del self._gets[prop]
                get.future.set_exception(Timeout("the selection's owner did not answer"))
        # Asleep until an event, posted work (the wake pipe) or the next transfer's deadline:
        # a timer that woke every 0.2 s cost each idle box's agent a share of a core.
        deadlines = [get.deadline for get in self._gets.values()]
        wait = max(0.0, min(deadlines) - now) if deadlines else None
        ready, _, _ = select.select([self.conn.fileno(), self._wake_r], [], [], wait)
        if self._wake_r in ready:
            os.read(self._wake_r, 4096)

    def _set(self, selection: Selection, data: bytes, done: Future[None]) -> None:
        atom = self.atom(_NAMES[selection])
        self.window.set_selection_owner(atom, X.CurrentTime)
        self.conn.sync()
        if self.conn.get_selection_owner(atom) != self.window:
            done.set_exception(BadRequest(f"could not own the {selection} selection"))
            return
        self._owned[atom] = data
        done.set_result(None)

    def _start_get(self, selection: Selection, done: Future[str]) -> None:
        atom = self.atom(_NAMES[selection])
        # The server says who owns it: a program that took the selection from us a moment
        # ago has its SelectionClear still unread (this turn runs posted work first), and
        # the text we held is no longer the selection's.
        owner = self.conn.get_selection_owner(atom)
        if atom in self._owned and owner == self.window:
            done.set_result(self._owned[atom].decode("utf-8", errors="replace"))
            return
        self._owned.pop(atom, None)
        if owner == X.NONE:
            done.set_result("")
            return
        prop = self.atom(f"HOLM_{_NAMES[selection]}")
        if prop in self._gets:
            # One transfer per selection at a time: the later caller shares its answer.
            self._gets[prop].future.add_done_callback(lambda f: _copy(f, done))
            return
        targets = [self.atom("UTF8_STRING"), Xatom.STRING]
        self._gets[prop] = _Get(done, targets, time.monotonic() + GET_TIMEOUT_S)
        self._convert(atom, prop)

    def _convert(self, selection: int, prop: int) -> None:
        self.window.convert_selection(selection, self._gets[prop].targets[0], prop, X.CurrentTime)
        self.conn.flush()

    def _on_event(self, ev: Any) -> None:
        if ev.type == X.SelectionRequest:
            self._answer(ev)
        elif ev.type == X.SelectionClear:
            self._owned.pop(int(ev.atom), None)
        elif ev.type == X.SelectionNotify:
            self._on_notify(ev)
        elif ev.type == X.PropertyNotify and ev.state == X.PropertyNewValue:
            self._on_incr_chunk(int(ev.atom))

    def _on_notify(self, ev: Any) -> None:
        key = self.atom(f"HOLM_{self.conn.get_atom_name(ev.selection)}")
        get = self._gets.get(key)
        if get is None:
            return
        if not ev.property:
            # The owner refused this target; ask for the next.
            get.targets.pop(0)
            if get.targets:
                self._convert(int(ev.selection), key)
            else:
                del self._gets[key]
                get.future.set_result("")
            return
        prop = key
        reply = self.window.get_full_property(prop, X.AnyPropertyType)
        if reply is not None and reply.property_type == self.atom("INCR"):
            # Large text comes in chunks: deleting the property asks for the next one.
            get.incr = bytearray()
            self.window.delete_property(prop)
            self.conn.flush()
            return
        self.window.delete_property(prop)
        self.conn.flush()
        del self._gets[key]
        get.future.set_result(_decode(reply))

    def _on_incr_chunk(self, prop: int) -> None:
        get = self._gets.get(prop)
        if get is None or get.incr is None:
            return
        reply = self.window.get_full_property(prop, X.AnyPropertyType)
        self.window.delete_property(prop)
        self.conn.flush()
        chunk = b"" if reply is None else _bytes(reply.value)
        if chunk:
            get.incr += chunk
            get.deadline = time.monotonic() + GET_TIMEOUT_S
            return
        del self._gets[prop]
        get.future.set_result(bytes(get.incr).decode("utf-8", errors="replace"))

    def _answer(self, ev: Any) -> None:
        data = self._owned.get(int(ev.selection))
        prop = int(ev.property) or int(ev.target)
        target = int(ev.target)
        requestor = ev.requestor
        answered = data is not None
        if data is None:
            pass
        elif target == self.atom("TARGETS"):
            offered = [self.atom("TARGETS"), self.atom("TIMESTAMP"), Xatom.STRING]
            offered += [self.atom(name) for name in _TEXT_TARGETS]
            requestor.change_property(prop, Xatom.ATOM, 32, offered)
        elif target in [self.atom(name) for name in _TEXT_TARGETS]:
            kind = target if target != self.atom("TEXT") else self.atom("UTF8_STRING")
            requestor.change_property(prop, kind, 8, data)
        elif target == Xatom.STRING:
            latin = data.decode("utf-8").encode("latin-1", errors="replace")
            requestor.change_property(prop, Xatom.STRING, 8, latin)
        elif target == self.atom("TIMESTAMP"):
            requestor.change_property(prop, Xatom.INTEGER, 32, [X.CurrentTime])
        else:
            answered = False
        notify = event.SelectionNotify(
            time=ev.time,
            requestor=requestor,
            selection=ev.selection,
            target=ev.target,
            property=prop if answered else X.NONE,
        )
        requestor.send_event(notify, event_mask=0)
        self.conn.flush()


def _bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("latin-1", errors="replace")
    return bytes(value)


def _decode(reply: Any) -> str:
    if reply is None:
        return ""
    data = _bytes(reply.value)
    if reply.property_type == Xatom.STRING:
        return data.decode("latin-1")
    return data.decode("utf-8", errors="replace")


def _copy(source: Future[str], target: Future[str]) -> None:
    error = source.exception()
    if error is not None:
        target.set_exception(error)
    else:
        target.set_result(source.result())
