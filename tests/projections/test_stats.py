"""A trace's figures: counts by kind and actor, duration, frames, failures."""

from __future__ import annotations

from projection_kit import TraceBuilder

from holm.projections import trace_stats
from holm.wire.entries import BoxReady, TakeoverStarted


def test_counts_duration_frames_and_failures(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(BoxReady, actor="system", gap_ms=1500)
    trace.acted()
    trace.acted(ok=False)
    trace.frame()
    trace.add(TakeoverStarted, screen=0)
    trace.frame(actor="person")
    trace.executed(["true"], 0)
    trace.executed(["false"], 1)
    trace.executed(["sleep", "9"], None, timed_out=True)
    stats = trace_stats(trace.entries)
    assert stats.entries == 10
    assert (stats.first_seq, stats.last_seq) == (0, 9)
    assert stats.duration_ms == trace.entries[-1].at_ms - trace.entries[0].at_ms == 1500 + 8 * 100
    assert stats.frames == 2
    # The refused step, the command that exited 1 and the one that timed out.
    assert stats.failures == 3
    assert stats.by_kind == {
        "acted": 2,
        "box_created": 1,
        "box_ready": 1,
        "executed": 3,
        "frame": 2,
        "takeover_started": 1,
    }
    assert stats.by_actor == {"agent": 8, "person": 1, "system": 1}
    assert not stats.incomplete


def test_empty_trace() -> None:
    stats = trace_stats([], incomplete=True)
    assert (stats.entries, stats.duration_ms, stats.first_at_ms, stats.incomplete) == (
        0,
        0,
        None,
        True,
    )
