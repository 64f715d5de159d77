"""What replay needs of the server's command side: the engine's operations a fork does,
named here so that `holm.replay` depends on this protocol, not on the engine (the engine
satisfies it; docs/architecture.md draws the layers)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from holm.config import Config
from holm.projections.box_state import BoxState
from holm.wire.actions import Action
from holm.wire.api import ActionsRequest, ActionsResult, TracePage
from holm.wire.entries import Actor
from holm.wire.results import ActionResult
from holm.wire.runtime import FrameResult
from holm.wire.spec import Placement, Spec


class Boxes(Protocol):
    config: Config

    async def box(self, box_id: str) -> BoxState: ...

    async def record_box(
        self,
        spec: Spec,
        placement: Placement,
        *,
        owner: str | None = None,
        forked_from: tuple[str, int | None] | None = None,
    ) -> str:
        """Record a new box (`box_created`, and `forked_from` when given) without starting
        it; `start_recorded` starts it."""
        ...

    async def start_recorded(self, box_id: str) -> BoxState:
        """Start a recorded box: ready, or `box_failed` recorded and the error raised."""
        ...

    async def fail_starting(self, box_id: str, why: str) -> None:
        """Record `box_failed` for a box still `starting` whose start was given up."""
        ...

    def queue(self, name: str, work: Callable[[], Awaitable[None]]) -> bool:
        """Run `work` as a job when the server queues its work; false when it does not
        (the caller does the work now)."""
        ...

    async def run_batch(
        self, box_id: str, screen: int, request: ActionsRequest, *, actor: Actor = "agent"
    ) -> ActionsResult: ...

    async def act(
        self,
        box_id: str,
        screen: int,
        action: Action,
        *,
        actor: Actor = "agent",
        secrets: Mapping[str, str] | None = None,
    ) -> ActionResult: ...

    async def person_text(self, trace: str, sealed: str) -> str | None:
        """A person's typed text sealed under the trace's key; None once it was shredded."""
        ...

    async def check_secrets(
        self, workspace: str | None, names: set[str], given: Mapping[str, str]
    ) -> None:
        """Refuse (400, naming them) when a name has no value, given or the workspace's."""
        ...

    async def frame(self, box_id: str, screen: int, *, have: str | None = None) -> FrameResult: ...

    async def record_frame(self, box_id: str, screen: int, *, always: bool = False) -> bool: ...

    async def read_trace(
        self, box_id: str, after: int | None = None, limit: int = ...
    ) -> TracePage: ...

    async def trace_frame(self, box_id: str, frame_hash: str) -> bytes: ...


__all__ = ["Boxes"]
