"""Figures about one trace, for `holm trace --stats`: entries by kind and by actor, how long
it ran, how many frames, how many failures."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import msgspec

from holm.wire.entries import Acted, Entry, Executed, FrameSeen, kind_of


class TraceStats(msgspec.Struct, kw_only=True):
    entries: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    first_at_ms: int | None = None
    last_at_ms: int | None = None
    # From the first entry's at_ms to the last's.
    duration_ms: int = 0
    frames: int = 0
    # Steps that did not succeed: an `acted` with ok false, a command that exited non-zero,
    # had no exit code, or timed out.
    failures: int = 0
    by_kind: dict[str, int] = msgspec.field(default_factory=dict)
    by_actor: dict[str, int] = msgspec.field(default_factory=dict)
    incomplete: bool = False


def trace_stats(entries: Iterable[Entry], incomplete: bool = False) -> TraceStats:
    kinds: Counter[str] = Counter()
    actors: Counter[str] = Counter()
    stats = TraceStats(incomplete=incomplete)
    for entry in entries:
        kinds[kind_of(entry)] += 1
        actors[entry.actor] += 1
        if stats.first_seq is None:
            stats.first_seq, stats.first_at_ms = entry.seq, entry.at_ms
        stats.last_seq, stats.last_at_ms = entry.seq, entry.at_ms
        match entry:
            case FrameSeen():
                stats.frames += 1
            case Acted(ok=False) | Executed(timed_out=True):
                stats.failures += 1
            case Executed(code=code) if code != 0:
                stats.failures += 1
            case _:
                pass
    stats.entries = kinds.total()
    if stats.first_at_ms is not None and stats.last_at_ms is not None:
        stats.duration_ms = stats.last_at_ms - stats.first_at_ms
    stats.by_kind = dict(sorted(kinds.items()))
    stats.by_actor = dict(sorted(actors.items()))
    return stats


__all__ = ["TraceStats", "trace_stats"]
