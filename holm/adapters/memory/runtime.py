"""A test double: a `Runtime` whose boxes are a few dictionaries in this process.

It exists for the tests of the engine and the HTTP layer (and the schemathesis run, where a
real box per generated request would take far too long); holmd never serves it. It is honest
about what it models: a box's screen is a picture that every input step changes (its PNG is
small whatever the screen's size: a test of the server never looks at its pixels), files
and the clipboard are kept, `exec` knows `echo`, `true`, `false` and `sleep`, and the desktop
of a paused or stopped box is refused in the real runtimes' words. The contract suite
(tests/contract/) runs the same actions on it and on real boxes. `max_sleep_secs` caps the time that
waits and `sleep` really take, for runs that send many generated requests. Boxes outlive a
`MemoryRuntime` object when the same `MemoryWorld` is given to a new one, so a restarted
server can adopt them.
"""

from __future__ import annotations

import asyncio
import time
from typing import Literal

from holm.adapters.memory import agent_server
from holm.errors import (
    BadRequest,
    Denied,
    Failed,
    NotFound,
    ScreenUnavailable,
    Unavailable,
    Unsupported,
)
from holm.streams import Stream, stream_pair
from holm.wire import results as r
from holm.wire.runtime import Capabilities, RuntimeBox, Started, StreamKind
from holm.wire.spec import Placement, Spec, canonical_spec

from .desktop import MemoryDesktop
from .screen import MemoryScreen


class MemoryBox:
    def __init__(self, box_id: str, spec: Spec, placement: Placement, server_id: str) -> None:
        desktop = canonical_spec(spec).desktop
        self.box_id = box_id
        self.spec = spec
        self.placement = placement
        self.server_id = server_id
        self.owner: str | None = None
        self.created_at_ms = int(time.time() * 1000)
        self.state: Literal["running", "paused", "stopped"] = "running"
        self.screens = [
            MemoryScreen(desktop.width or 0, desktop.height or 0) for _ in range(desktop.screens)
        ]
        self.files: dict[str, bytes] = {}
        self.cookies: list[r.Cookie] = []
        self.desktop = MemoryDesktop(self)
        self.max_sleep_secs: float | None = None
        self.spare = False

    async def sleep(self, seconds: float) -> None:
        cap = self.max_sleep_secs
        await asyncio.sleep(seconds if cap is None else min(seconds, cap))


class MemoryWorld:
    """What outlives a runtime object: the boxes, as a real runtime's processes would."""

    def __init__(self) -> None:
        self.boxes: dict[str, MemoryBox] = {}


class MemoryRuntime:
    """A runtime of in-memory boxes (see the module docstring). `create_delay` lets a test
    see a box while it is `starting`; `fail_create` makes every create fail; `reachable`
    false makes every call fail as a runtime that cannot be reached does (`unavailable`,
    retryable), its boxes left as they were."""

    def __init__(
        self,
        name: str = "memory",
        *,
        server_id: str = "test",
        world: MemoryWorld | None = None,
        create_delay: float = 0.0,
        max_sleep_secs: float | None = None,
    ) -> None:
        self.name = name
        self.max_sleep_secs = max_sleep_secs
        self.server_id = server_id
        self.world = world or MemoryWorld()
        self.create_delay = create_delay
        self.fail_create: str | None = None
        self.reachable = True
        # The agent streams served (`open_stream`).
        self._served: set[asyncio.Task[None]] = set()

    def _reach(self) -> None:
        if not self.reachable:
            raise Unavailable(f"the {self.name} runtime cannot be reached", retryable=True)

    def can(self) -> Capabilities:
        # No viewer: its screens are no pictures a VNC server could serve.
        return Capabilities(persistent=True, profile=True, viewer=False)

    def _box(self, box_id: str) -> MemoryBox:
        self._reach()
        box = self.world.boxes.get(box_id)
        if box is None:
            raise NotFound(f"the {self.name} runtime has no box {box_id}")
        return box

    async def create(
        self, box_id: str, spec: Spec, placement: Placement, *, owner: str | None = None
    ) -> Started:
        self._reach()
        if spec.desktop.packages:
            raise Unsupported(f"the {self.name} runtime cannot install packages")
        if self.create_delay:
            await asyncio.sleep(self.create_delay)
        if self.fail_create is not None:
            raise Failed(self.fail_create)
        if box_id in self.world.boxes:
            raise BadRequest(f"the {self.name} runtime already has a box {box_id}")
        box = self.world.boxes[box_id] = MemoryBox(box_id, spec, placement, self.server_id)
        box.owner = owner
        box.max_sleep_secs = self.max_sleep_secs
        return self._started(box_id)

    async def create_spare(self, box_id: str, spec: Spec, placement: Placement) -> Started:
        started = await self.create(box_id, spec, placement)
        self.world.boxes[box_id].spare = True
        return started

    async def claim(
        self, box_id: str, placement: Placement, *, owner: str | None = None
    ) -> Started:
        box = self._box(box_id)
        if not box.spare:
            raise NotFound(f"the {self.name} runtime has no spare box {box_id}")
        box.spare, box.placement, box.owner = False, placement, owner
        box.created_at_ms = int(time.time() * 1000)
        return self._started(box_id)

    def _started(self, box_id: str) -> Started:
        box = self._box(box_id)
        return Started(viewer_urls=[f"memory:{box_id}/{i}" for i in range(len(box.screens))])

    # What each step refuses, in the words of the real runtimes (docker, local).

    async def pause(self, box_id: str) -> None:
        box = self._box(box_id)
        if box.state == "stopped":
            raise Denied(f"box {box_id} is stopped; only a running box can be paused")
        box.state = "paused"

    async def resume(self, box_id: str) -> None:
        box = self._box(box_id)
        if box.state == "stopped":
            raise Denied(f"box {box_id} is stopped; start it rather than resume it")
        box.state = "running"

    async def stop(self, box_id: str) -> None:
        box = self._box(box_id)
        # A stopped box keeps its files, persistent or not.
        box.state = "stopped"

    async def start(self, box_id: str) -> Started:
        box = self._box(box_id)
        if box.state != "stopped":
            raise Denied(f"box {box_id} is {box.state}; stop it before starting it again")
        box.state = "running"
        fresh = MemoryBox(box_id, box.spec, box.placement, box.server_id)
        box.screens, box.desktop = fresh.screens, MemoryDesktop(box)
        return self._started(box_id)

    async def delete(self, box_id: str) -> None:
        self._reach()
        self.world.boxes.pop(box_id, None)

    async def list(self) -> list[RuntimeBox]:
        self._reach()
        return [self._listed(box) for box in self.world.boxes.values()]

    def _listed(self, box: MemoryBox) -> RuntimeBox:
        desktop = Started() if box.state == "stopped" else self._started(box.box_id)
        return RuntimeBox(
            box_id=box.box_id,
            state=box.state,
            server_id=box.server_id,
            spec=box.spec,
            placement=box.placement,
            created_at_ms=box.created_at_ms,
            owner=box.owner,
            spare=box.spare,
            viewer_urls=desktop.viewer_urls,
            devtools_url=desktop.devtools_url,
        )

    async def desktop(self, box_id: str) -> MemoryDesktop:
        box = self._box(box_id)
        # The words every runtime uses for these (the local and docker runtimes).
        if box.state == "stopped":
            raise ScreenUnavailable(f"box {box_id} is stopped; start it first")
        if box.state == "paused":
            raise ScreenUnavailable(f"box {box_id} is paused; resume it first")
        return box.desktop

    async def open_stream(
        self, box_id: str, kind: StreamKind, screen: int = 0, *, limit: int = 1 << 16
    ) -> Stream:
        """The agent's protocol, served from the box's desktop (agent_server.py); no VNC
        server and no DevTools: its screens are not real."""
        box = self._box(box_id)
        if kind != "agent":
            raise Unsupported(f"the {self.name} runtime has no {kind}: its screens are not real")
        desktop = await self.desktop(box_id)
        ours, theirs = await stream_pair(limit)
        served = await asyncio.open_unix_connection(sock=theirs, limit=1 << 27)
        task = asyncio.create_task(agent_server.serve(desktop, len(box.screens), served))
        self._served.add(task)
        task.add_done_callback(self._served.discard)
        return ours

    async def close(self) -> None:
        for task in list(self._served):
            task.cancel()


__all__ = ["MemoryBox", "MemoryDesktop", "MemoryRuntime", "MemoryWorld"]
