"""A box of this process, without holmd: `Computer` (the spec's library without a server,
docs/boxes.md).

    from holm import Computer

    with Computer() as computer:
        computer.open("https://example.com")
        computer.click(640, 400)
        png = computer.screenshot()

`Computer()` starts a local box (bubblewrap, Xvfb, Chromium) through the same local
runtime and in-box agent as holmd's (holm/adapters/local/runtime.py,
holm/adapters/agent_desktop.py), on an event loop of its own in a thread, so its calls
block as `Box`'s do; its methods are the same (holm/box_methods.py). There is no trace: a
Computer records nothing, so it has nothing to fork. It is removed (its processes and its
folder) when its block ends or when it is dropped, unless `keep_on_drop`; a kept one is
still running when this process ends (local boxes outlive whoever started them), and
`holm.adapters.local.runtime.LocalRuntime(computer.boxes_dir).delete(computer.id)` ends it.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import shutil
import tempfile
import threading
import uuid
import weakref
from collections.abc import Coroutine, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from holm.adapters.base import Desktop
from holm.adapters.local.runtime import DEFAULT_DISPLAY_BASE, DEFAULT_DISPLAY_COUNT, LocalRuntime
from holm.errors import Unsupported
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.api import TracePage
from holm.wire.runtime import FrameResult
from holm.wire.spec import Placement, Spec

from .box import spec_of
from .box_methods import BlockingBox, BoxMethods, result_of

T = TypeVar("T")


class _Loop:
    """An event loop in a thread of its own, where the runtime and the agent's client run;
    `run` blocks the caller until a coroutine is done there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="holm-computer", daemon=True
        )
        self._thread.start()

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        done: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(work, self.loop)
        return done.result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class LocalDriver:
    """A box's actions done by its in-box agent, straight: no engine, no store. Each
    coroutine blocks until its work is done on the Computer's loop (so `Blocking` runs it
    to its end at once)."""

    def __init__(self, loop: _Loop, box_id: str, desktop: Desktop) -> None:
        self._loop = loop
        self._box_id = box_id
        self._desktop = desktop

    @property
    def box_id(self) -> str:
        return self._box_id

    async def steps(self, actions: Sequence[a.Action], screen: int) -> list[Any]:
        return self._loop.run(self._steps(list(actions), screen))

    async def _steps(self, actions: list[a.Action], screen: int) -> list[Any]:
        values = []
        try:
            for action in actions:
                values.append(result_of(action, await self._desktop.act(screen, action)))
        finally:
            # What the steps left down without a `hold_ms` is released, as after a batch.
            await self._desktop.end_batch(screen)
        return values

    async def screenshot(self, screen: int) -> bytes:
        frame = self._loop.run(self._frame(screen))
        if frame.image is None:
            raise RuntimeError("the screen's capture came without a PNG")
        return frame.image

    async def _frame(self, screen: int) -> FrameResult:
        # On the loop: the agent's client sends its request as it is called.
        return await self._desktop.frame(screen)

    async def _one(self, action: a.Action) -> Any:
        (value,) = self._loop.run(self._steps([action], 0))
        return value

    async def exec(self, what: a.ExecWhat) -> r.ExecResult:
        done: r.ExecResult = await self._one(a.Exec(what=what))
        return done

    async def read_file(self, path: str) -> bytes:
        data: r.FileData = await self._one(a.ReadFile(path=path))
        return base64.b64decode(data.contents_base64)

    async def write_file(self, path: str, contents: bytes) -> r.FileSaved:
        what = a.WriteWhat(path=path, contents_base64=base64.b64encode(contents).decode())
        saved: r.FileSaved = await self._one(a.WriteFile(what=what))
        return saved

    async def list_files(self, path: str) -> r.FileList:
        listed: r.FileList = await self._one(a.ListFiles(path=path))
        return listed

    async def trace(self) -> TracePage:
        raise Unsupported("a Computer keeps no trace: a box of holmd (holm.Box) does")

    async def remove(self) -> None:
        raise Unsupported("a Computer is removed by close()")


def _end(
    loop: _Loop, runtime: LocalRuntime, box_id: str | None, keep: bool, made_dir: Path | None
) -> None:
    """Remove the box (unless `keep`) and stop what ran it; the folder this Computer made
    goes with its box."""
    try:
        if box_id is not None and not keep:
            loop.run(runtime.delete(box_id))
    finally:
        try:
            loop.run(runtime.close())
        finally:
            loop.stop()
            if made_dir is not None and not keep:
                shutil.rmtree(made_dir, ignore_errors=True)


class Computer(BlockingBox):
    """A local box of this process, driven without a server: the methods of `holm.Box`
    but `fork` and `trace` (no trace is kept)."""

    def __init__(
        self,
        spec: Spec | None = None,
        *,
        width: int | None = None,
        height: int | None = None,
        keep_on_drop: bool = False,
        boxes_dir: str | Path | None = None,
        display_base: int = DEFAULT_DISPLAY_BASE,
        display_count: int = DEFAULT_DISPLAY_COUNT,
    ) -> None:
        """Start the box and return once its desktop is ready. `boxes_dir`: where the
        box's folder goes (a new folder in /tmp by default, removed with the box); the
        X displays it may take are `display_base` and the `display_count` after it."""
        self.keep_on_drop = keep_on_drop
        made = None if boxes_dir is not None else Path(tempfile.mkdtemp(prefix="holm-", dir="/tmp"))
        self.boxes_dir = Path(boxes_dir) if boxes_dir is not None else made
        assert self.boxes_dir is not None
        self._loop = _Loop()
        box_id = "box_" + uuid.uuid4().hex
        runtime = self._loop.run(self._runtime(self.boxes_dir, display_base, display_count))
        started: str | None = None
        try:
            self._loop.run(runtime.create(box_id, spec_of(spec, width, height), Placement()))
            started = box_id
            desktop = self._loop.run(runtime.desktop(box_id))
        except BaseException:
            _end(self._loop, runtime, started, False, made)
            raise
        self._runtime_ = runtime
        # Dropped without `close()`: removed all the same (unless kept), once.
        self._finalizer = weakref.finalize(
            self, _end, self._loop, runtime, box_id, keep_on_drop, made
        )
        super().__init__(BoxMethods(LocalDriver(self._loop, box_id, desktop)))

    @staticmethod
    async def _runtime(boxes_dir: Path, display_base: int, display_count: int) -> LocalRuntime:
        # Made on its loop: what it opens belongs there.
        return LocalRuntime(boxes_dir, display_base=display_base, display_count=display_count)

    def fork(self) -> Computer:
        raise Unsupported("a Computer keeps no trace to fork: a box of holmd (holm.Box) does")

    def close(self) -> None:
        """Remove the box, unless `keep_on_drop`, and stop its loop."""
        self._finalizer()

    def __enter__(self) -> Computer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


__all__ = ["Computer"]
