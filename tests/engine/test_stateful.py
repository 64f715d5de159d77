"""The core claim, under random use: whatever an agent and the server do to boxes (create,
act, exec, pause, resume, stop, delete, a runtime losing a box, the reaper, a restart of the
server on the same durable store), every box the engine serves equals the fold of its
trace, and the events feed equals the feed rebuilt from every trace."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from holm.adapters.memory.runtime import MemoryRuntime, MemoryWorld
from holm.config import load_config
from holm.engine import Engine
from holm.errors import HolmError
from holm.events import LocalStore
from holm.projections.box_state import BoxState, fold
from holm.projections.events_feed import EventsFeed
from holm.wire import actions as a
from holm.wire.api import ActionsRequest
from holm.wire.entries import PAGE_MAX, Entry
from holm.wire.feed import Event
from holm.wire.spec import Placement, Spec
from holm.wire.values import Point

T = TypeVar("T")
SERVER_ID = "srv_stateful"

steps = st.sampled_from(
    [
        a.Click(at=Point(x=3, y=4)),
        a.Type(text="hi"),
        a.Press(chord=["ctrl", "a"]),
        a.Cursor(),
        a.Exec(what=a.ExecWhat(argv=["echo", "step"])),
        a.Launch(app="xterm"),
        a.ReadFile(path="/nope"),
    ]
)
alone = st.sampled_from(
    [
        a.Exec(what=a.ExecWhat(argv=["echo", "alone"])),
        a.WriteFile(what=a.WriteWhat(path="/tmp/a", contents_base64="aGk=")),
        a.ReadFile(path="/tmp/a"),
        a.Clipboard(text="copied"),
        a.Clipboard(),
        a.Launch(app="xterm"),
        a.Windows(),
    ]
)


class BoxesAgreeWithTheirTraces(RuleBasedStateMachine):
    boxes = Bundle("boxes")

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.folder = Path(tempfile.mkdtemp(prefix="holm-stateful-"))
        self.world = MemoryWorld()
        self.engine = self.run(self._start())

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(work)

    async def _start(self) -> Engine:
        config = load_config(
            {}, state_dir=str(self.folder), default_runtime="memory", schedule="external"
        )
        runtime = MemoryRuntime(server_id=SERVER_ID, world=self.world)
        # The watchers look rarely: their frames are entries like any other, but a test
        # that compares whole traces wants them quiet.
        engine = Engine(
            config,
            LocalStore(self.folder / "state"),
            {runtime.name: runtime},
            server_id=SERVER_ID,
            frame_poll_secs=3600,
        )
        await engine.start()
        return engine

    async def _attempt(self, work: Coroutine[Any, Any, object]) -> None:
        # A refusal (a paused box, a removed one) is an answer too: it must record nothing
        # that disagrees with the box; the invariants check that.
        with contextlib.suppress(HolmError):
            await work

    @rule(target=boxes)
    def create(self) -> str:
        return self.run(self.engine.create_box(Spec(), Placement())).id

    @rule(box=boxes, batch=st.lists(steps, min_size=1, max_size=3), keep_going=st.booleans())
    def run_a_batch(self, box: str, batch: list[a.Action], keep_going: bool) -> None:
        request = ActionsRequest(actions=batch, keep_going=keep_going)
        self.run(self._attempt(self.engine.run_batch(box, 0, request)))

    @rule(box=boxes, action=alone)
    def act_alone(self, box: str, action: a.Action) -> None:
        self.run(self._attempt(self.engine.act(box, 0, action)))

    @rule(box=boxes, verb=st.sampled_from(["pause", "resume", "stop", "delete"]))
    def change_its_life(self, box: str, verb: str) -> None:
        change = getattr(self.engine, f"{verb}_box")
        self.run(self._attempt(change(box)))

    @rule(box=boxes)
    def the_runtime_loses_it(self, box: str) -> None:
        self.world.boxes.pop(box, None)

    @rule()
    def reap(self) -> None:
        self.run(self.engine.reap())

    @rule()
    def restart(self) -> None:
        self.run(self._restart())

    async def _restart(self) -> None:
        await self.engine.close()
        await self.engine.store.close()
        self.engine = await self._start()

    async def _traces(self) -> dict[str, list[Entry]]:
        traces: dict[str, list[Entry]] = {}
        for info in await self.engine.store.traces():
            entries: list[Entry] = []
            after: int | None = None
            while page := await self.engine.store.read(info.trace, after, PAGE_MAX):
                entries += page
                after = page[-1].seq
            traces[info.trace] = entries
        return traces

    async def _snapshot(self) -> tuple[dict[str, list[Entry]], dict[str, BoxState], list[Event]]:
        """The traces with the boxes and the feed as the engine serves them at one moment:
        the frame watchers append when they like, so the traces are read until a second
        read finds nothing new beside the served state."""
        while True:
            traces = await self._traces()
            served = {state.id: state for state in self.engine.boxes()}
            events = self.engine.feed.events()
            if await self._traces() == traces:
                return traces, served, events
            await asyncio.sleep(0.01)

    @invariant()
    def every_box_is_the_fold_of_its_trace(self) -> None:
        traces, served, _ = self.run(self._snapshot())
        for box_id, state in served.items():
            assert fold(traces[box_id]) == state, box_id
        for box_id in set(traces) - set(served) - {"server"}:
            folded = fold(traces[box_id])
            assert folded is not None and folded.removed

    @invariant()
    def the_feed_is_the_feed_rebuilt_from_every_trace(self) -> None:
        traces, _, events = self.run(self._snapshot())
        assert events == EventsFeed.rebuilt(traces, self.engine.config).events()

    def teardown(self) -> None:
        self.run(self.engine.close())
        self.run(self.engine.store.close())
        self.loop.close()
        shutil.rmtree(self.folder, ignore_errors=True)


BoxesAgreeWithTheirTraces.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestBoxesAgreeWithTheirTraces = BoxesAgreeWithTheirTraces.TestCase
