"""The last lines of each trace that a database-backed store wrote, kept in memory, so that
reads of what was acknowledged are served while the database cannot be reached.

Each trace keeps an unbroken run of seqs ending at the last seq this store wrote: a commit
that does not follow on (another holmd wrote in between) starts the run again. A read is
served from here only when the run covers where it starts; a read from a trace's start
only when the run begins at seq 0. What another holmd wrote after this one's last commit is
missing from the end: a read during an outage is the trace as this holmd last wrote it. A
trace's info and its last seq are given from here on the same terms.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence

from holm.events.store import TraceInfo

RECENT_ENTRIES = 500
RECENT_TRACES = 256


class RecentLines:
    def __init__(self, entries: int = RECENT_ENTRIES, traces: int = RECENT_TRACES) -> None:
        self.entries = entries
        self.traces = traces
        # trace -> (seq, at_ms, line), an unbroken run of seqs.
        self._runs: OrderedDict[str, deque[tuple[int, int, str]]] = OrderedDict()

    def add(self, trace: str, lines: Sequence[tuple[int, int, str]]) -> None:
        """Lines just committed to `trace`, as (seq, at_ms, line), in seq order."""
        run = self._runs.get(trace)
        if (
            run is not None
            and lines
            and run[-1][0] == lines[0][0] - 1
            and lines[-1][0] - lines[0][0] == len(lines) - 1
        ):
            run.extend(lines)  # the usual commit: the run goes on unbroken
        else:
            for seq, at_ms, line in lines:
                run = self._runs.get(trace)
                if run is None or run[-1][0] != seq - 1:
                    run = self._runs[trace] = deque(maxlen=self.entries)
                run.append((seq, at_ms, line))
        self._runs.move_to_end(trace)
        while len(self._runs) > self.traces:
            self._runs.popitem(last=False)

    def page(self, trace: str, after: int | None, limit: int) -> list[str] | None:
        """The lines a read of seqs > `after` (None: from the start) gets, at most `limit`;
        None when the run kept does not cover where the read starts."""
        run = self._runs.get(trace)
        if run is None:
            return None
        first = run[0][0]
        if (after is None and first != 0) or (after is not None and after + 1 < first):
            return None
        start = 0 if after is None else max(after + 1 - first, 0)
        return [line for _, _, line in list(run)[start : start + limit]]

    def max_seq(self, trace: str) -> int | None:
        run = self._runs.get(trace)
        return None if run is None else run[-1][0]

    def info(self, trace: str) -> TraceInfo | None:
        """The info of a trace whose whole run is kept here (from seq 0), else None."""
        run = self._runs.get(trace)
        if run is None or run[0][0] != 0:
            return None
        return TraceInfo(
            trace=trace,
            entries=len(run),
            max_seq=run[-1][0],
            first_at_ms=run[0][1],
            last_at_ms=run[-1][1],
        )

    def clear(self) -> None:
        self._runs.clear()


__all__ = ["RECENT_ENTRIES", "RECENT_TRACES", "RecentLines"]
