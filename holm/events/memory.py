"""The default store (`HOLM_STORAGE_BACKEND=memory`): traces in the server's memory, lost
when it stops.

Bounded as the spec says: at most 10,000 entries and 256 frames for each trace, and 256
box traces; the oldest goes first. Dropping old entries does not renumber: seq keeps
counting, and a read from the start begins at the oldest kept. A prune by age drops a
trace's old entries as the local store does (pruning.py). When a 257th box arrives,
the trace dropped is that of the removed box (`gone` or `box_deleted`) written least
recently: a live box's trace is never dropped, since its state is derived from it. When
every kept trace is a live box's, the new trace is refused with `unavailable` (retryable:
a box removed meanwhile makes room), so the create that began it records nothing. The
server's own trace does not count as a box. Entries are kept as their encoded lines, so
that a reader gets its own copy, shaped exactly as the durable store would give it back.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Sequence
from itertools import islice

import msgspec

from holm.errors import Unavailable
from holm.events.blobs import check_name
from holm.events.codec import decode_line, decode_lines, encode_entry
from holm.events.pruning import KeepEntries, Layout, keep_none, old_count
from holm.events.store import TraceInfo
from holm.wire.api import PruneReport
from holm.wire.entries import PAGE_MAX, SERVER_TRACE, BoxDeleted, BoxGone, Entry

MAX_ENTRIES = 10_000
MAX_FRAMES = 256
MAX_TRACES = 256


class _Frame(msgspec.Struct):
    png: bytes
    at_ms: int


class _Trace:
    __slots__ = ("frames", "last_at_ms", "layout", "lines", "name", "removed")

    def __init__(self, name: str, max_entries: int) -> None:
        self.name = name
        self.lines: deque[tuple[int, int, bytes]] = deque(maxlen=max_entries)  # seq, at_ms, line
        self.layout = Layout([])
        self.last_at_ms: int | None = None
        self.frames: OrderedDict[str, _Frame] = OrderedDict()
        # The box was removed (`gone`, `box_deleted`): its trace may make room for another.
        self.removed = False

    def info(self) -> TraceInfo:
        return TraceInfo(
            trace=self.name,
            entries=len(self.lines),
            max_seq=self.layout.next_seq - 1,
            first_seq=self.layout.first_seq,
            first_at_ms=self.lines[0][1] if self.lines else None,
            last_at_ms=self.last_at_ms,
        )

    def prune(self, cutoff_ms: int, keep: KeepEntries) -> int:
        """Drop the old prefix but for what `keep` names; how many entries went."""
        # Never the last entry: a trace kept whole-old (the server's) keeps it.
        old = old_count((at_ms for _, at_ms, _ in self.lines), cutoff_ms)
        old = max(0, min(old, len(self.lines) - 1))
        prefix = list(islice(self.lines, old))
        named = keep(self.name, (decode_line(line) for _, _, line in prefix))
        kept = [item for item in prefix if item[0] in named]
        if len(kept) == old:
            return 0
        for _ in range(old):
            self.lines.popleft()
        self.lines.extendleft(reversed(kept))
        self.layout = self.layout.pruned(old, [seq for seq, _, _ in kept])
        return old - len(kept)


class MemoryStore:
    def __init__(
        self,
        *,
        keep_frames_secs: int = 2 * 3600,
        keep_entries_secs: int = 7 * 24 * 3600,
        max_entries: int = MAX_ENTRIES,
        max_frames: int = MAX_FRAMES,
        max_traces: int = MAX_TRACES,
    ) -> None:
        self.keep_frames_secs = keep_frames_secs
        self.keep_entries_secs = keep_entries_secs
        self.max_entries = max_entries
        self.max_frames = max_frames
        self.max_traces = max_traces
        # Least recently written first.
        self._traces: OrderedDict[str, _Trace] = OrderedDict()

    async def append(self, trace: str, entries: Sequence[Entry]) -> list[Entry]:
        check_name("trace", trace)
        if not entries:
            return []
        known = self._traces.get(trace)
        seq = 0 if known is None else known.layout.next_seq
        numbered = [msgspec.structs.replace(entry, seq=seq + i) for i, entry in enumerate(entries)]
        # Encoded before anything changes, so an entry that cannot be written fails alone.
        lines = [encode_entry(entry) for entry in numbered]
        holder = self._holder(trace)
        holder.lines.extend(
            (entry.seq, entry.at_ms, line) for entry, line in zip(numbered, lines, strict=True)
        )
        layout = holder.layout
        layout.next_seq += len(numbered)
        if layout.lines > len(holder.lines):
            # The deque let its oldest go.
            holder.layout = layout.pruned(layout.lines - len(holder.lines), ())
        holder.last_at_ms = numbered[-1].at_ms
        holder.removed = holder.removed or any(isinstance(e, BoxGone | BoxDeleted) for e in entries)
        return numbered

    async def read(
        self, trace: str, after: int | None = None, limit: int = PAGE_MAX
    ) -> list[Entry]:
        holder = self._traces.get(trace)
        if holder is None or limit <= 0:
            return []
        start = 0 if after is None else holder.layout.line_of(after + 1)
        page = islice(holder.lines, start, start + limit)
        return decode_lines(b"".join(line for _, _, line in page))

    async def max_seq(self, trace: str) -> int:
        holder = self._traces.get(trace)
        return -1 if holder is None else holder.layout.next_seq - 1

    async def info(self, trace: str) -> TraceInfo | None:
        holder = self._traces.get(trace)
        return None if holder is None or holder.layout.next_seq == 0 else holder.info()

    async def traces(self) -> list[TraceInfo]:
        return [
            self._traces[name].info()
            for name in sorted(self._traces)
            if self._traces[name].layout.next_seq > 0
        ]

    async def put_frame(self, trace: str, frame_hash: str, png: bytes) -> None:
        check_name("trace", trace)
        check_name("frame hash", frame_hash)
        frames = self._holder(trace).frames
        frames[frame_hash] = _Frame(png, _now_ms())
        frames.move_to_end(frame_hash)
        while len(frames) > self.max_frames:
            frames.popitem(last=False)

    async def get_frame(self, trace: str, frame_hash: str) -> bytes | None:
        holder = self._traces.get(trace)
        frame = None if holder is None else holder.frames.get(frame_hash)
        return None if frame is None else frame.png

    async def prune(self, now_ms: int, keep: KeepEntries = keep_none) -> PruneReport:
        report = PruneReport()
        frames_cutoff = now_ms - self.keep_frames_secs * 1000
        entries_cutoff = now_ms - self.keep_entries_secs * 1000
        for name, holder in list(self._traces.items()):
            # The server's trace is never old as a whole: it holds the runtimes added.
            old = holder.last_at_ms is not None and holder.last_at_ms < entries_cutoff
            if old and name != SERVER_TRACE:
                del self._traces[name]
                report.boxes += 1
                report.entries += len(holder.lines)
                report.frames += len(holder.frames)
                continue
            report.entries += holder.prune(entries_cutoff, keep)
            for frame_hash, frame in list(holder.frames.items()):
                if frame.at_ms < frames_cutoff:
                    del holder.frames[frame_hash]
                    report.frames += 1
        return report

    async def close(self) -> None:
        self._traces.clear()

    def _holder(self, trace: str) -> _Trace:
        """The trace to write to, made the most recent; a new one may push out the least
        recently written trace of a removed box, and is refused when none is left."""
        holder = self._traces.get(trace)
        if holder is None:
            if trace != SERVER_TRACE:
                self._make_room()
            holder = self._traces[trace] = _Trace(trace, self.max_entries)
        self._traces.move_to_end(trace)
        return holder

    def _make_room(self) -> None:
        """Room for one more box trace: drop removed boxes' traces, least recently written
        first, until there is; Unavailable when only live boxes' are left."""
        boxes = [holder for name, holder in self._traces.items() if name != SERVER_TRACE]
        excess = len(boxes) + 1 - self.max_traces
        if excess <= 0:
            return
        removed = [holder for holder in boxes if holder.removed]
        if len(removed) < excess:
            raise Unavailable(
                f"the memory store keeps the traces of at most {self.max_traces} boxes and"
                " every one it holds is a live box's: delete a box, or use a durable store"
                " (HOLM_STORAGE_BACKEND)",
                retryable=True,
            )
        for holder in removed[:excess]:
            del self._traces[holder.name]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


__all__ = ["MAX_ENTRIES", "MAX_FRAMES", "MAX_TRACES", "MemoryStore"]
