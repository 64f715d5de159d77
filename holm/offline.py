"""Replay a trace file with no server: an engine in this process over a memory store and the
given runtimes makes a box from the trace's spec, and the interpreter does the trace's steps
on it, judged by the strict policy (golden replays) or a fork's.

The box is deleted at the end unless `keep`; a kept box stays in its runtime, where a holmd
on the same state dir adopts it when it starts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence

import msgspec

from holm.adapters.base import Runtime
from holm.config import Config
from holm.engine import Engine
from holm.errors import HolmError, NotFound, Unsupported
from holm.events import MemoryStore
from holm.replay.interpreter import ReplayTiming, replay_plan
from holm.replay.plan import plan_fork
from holm.replay.screen_check import Reference
from holm.replay.strict import FRAME_TOLERANCE, Divergence, ForkPolicy, ReplayPolicy, StrictPolicy
from holm.wire.api import Skipped
from holm.wire.entries import Entry


class OfflineReplay(msgspec.Struct, kw_only=True):
    """What `holm replay` reports."""

    box: str
    runtime: str
    strict: bool
    compare_frames: bool
    steps: int
    attempted: int
    ok: int
    stopped_at: int | None
    truncated: bool
    skipped: list[Skipped]
    divergence: Divergence | None
    kept: bool
    timing: ReplayTiming

    @property
    def passed(self) -> bool:
        """Every planned step was done and met the policy."""
        return self.stopped_at is None and not self.truncated and self.ok == self.steps


async def replay_entries(
    entries: Sequence[Entry],
    config: Config,
    runtimes: Mapping[str, Runtime],
    *,
    server_id: str,
    strict: bool = True,
    compare_frames: bool = True,
    runtime: str | None = None,
    up_to: int | None = None,
    keep: bool = False,
    frame_tolerance: float = FRAME_TOLERANCE,
    reference: Reference | None = None,
) -> OfflineReplay:
    """Make a box from the trace's spec on `runtime` (default: the trace's own) and do the
    trace's steps on it. `reference` reads the trace's recorded frames (by hash), which a
    strict replay needs to measure a frame's distance when its pixels are not the same."""
    plan = plan_fork(entries, up_to=up_to)
    if plan.origin is None:
        raise Unsupported("the trace has no box_created (or adopted with a spec) to replay from")
    name = runtime or plan.origin.runtime
    if name not in runtimes:
        have = ", ".join(sorted(runtimes)) or "none"
        raise NotFound(
            f"no runtime named {name!r} here (there is: {have}); pick one with --runtime"
        )
    placement = msgspec.structs.replace(plan.origin.placement, runtime=name)
    policy: ReplayPolicy = (
        StrictPolicy(compare_frames=compare_frames, frame_tolerance=frame_tolerance)
        if strict
        else ForkPolicy()
    )
    # One box, made once: a warm pool would only boot spares nobody takes.
    config = msgspec.structs.replace(config, storage_backend="memory", jobs="inline", pool={})
    engine = Engine(config, MemoryStore(), runtimes, server_id=server_id)
    try:
        box = await engine.create_box(plan.origin.spec, placement)
        try:
            run = await replay_plan(engine, box.id, plan, policy, reference)
        finally:
            if not keep:
                with contextlib.suppress(HolmError):
                    await engine.delete_box(box.id)
    finally:
        await engine.close()
    return OfflineReplay(
        box=box.id,
        runtime=name,
        strict=strict,
        compare_frames=strict and compare_frames,
        steps=len(plan.steps),
        attempted=run.report.attempted,
        ok=run.report.ok,
        stopped_at=run.report.stopped_at,
        truncated=run.report.truncated,
        skipped=run.report.skipped,
        divergence=run.divergence,
        kept=keep,
        timing=run.timing,
    )


__all__ = ["OfflineReplay", "replay_entries"]
