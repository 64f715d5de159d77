"""The files of a trace, and reading them without a store.

    <state>/traces/<trace>.jsonl        the entries, one JSON line each, seq 0, 1, 2, …
    <state>/traces/<trace>.idx          byte offset of each line (u64 little-endian)
    <state>/traces/<trace>.blobs        the blobs the trace's lines refer to, one a line
    <state>/traces/<trace>.torn         bytes of a torn last line, cut away on open
    <state>/traces/.<trace>.pruned      a pruned copy being written, renamed over the .jsonl
    <state>/blobs/<2 hex>/<hex>         values spilled out of lines (see codec.py)
    <state>/frames/<trace>/<hash>.png   frames under their pixel hash

Line i of a trace file holds seq i until a prune by age drops lines from its front: then
its lines hold the seqs of its `Layout` (pruning.py), a few kept ones and then every seq
from `first_seq` on. Bytes after the last newline are a torn line, and so is a last line
that is not a JSON object with an envelope: a reader leaves them out and calls the trace
incomplete. (An offline read refuses a file that ends in more lines than that which are not
entries: it is no trace, or a damaged one.) The `.idx` is rebuildable from the `.jsonl` at
any time.

`read_trace_file` (`read_trace_lines` for the lines as stored) and `trace_files` are the
offline API of `holm trace FILE|DIR`: they never change a file. Everything here blocks; a
store calls it from threads.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from itertools import pairwise
from pathlib import Path
from typing import NamedTuple

import msgspec

from holm.events.blobs import BlobStore
from holm.events.codec import CorruptLine, Envelope, decode_line, read_envelope
from holm.events.pruning import Layout, layout_by_search
from holm.events.store import TraceInfo
from holm.wire.entries import Entry

TRACES_DIR = "traces"
BLOBS_DIR = "blobs"
FRAMES_DIR = "frames"
JSONL = ".jsonl"
IDX = ".idx"
REFS = ".blobs"
TORN = ".torn"
PRUNED = ".pruned"

OFFSET = struct.Struct("<Q")
_CHUNK = 1 << 16
_SCAN_CHUNK = 1 << 20


class TraceRead(msgspec.Struct, kw_only=True):
    """What an offline read of a trace file gives: its entries, whether a writer died
    mid-line (the torn line is left out), and where the trace begins now (`first_seq`, as
    in `TraceInfo`: above 0 when its front was pruned)."""

    entries: list[Entry]
    incomplete: bool = False
    first_seq: int = 0

    def info(self, trace: str) -> TraceInfo:
        """The read's figures, as a store gives them for a trace it keeps."""
        first, last = (self.entries[0], self.entries[-1]) if self.entries else (None, None)
        return TraceInfo(
            trace=trace,
            entries=len(self.entries),
            max_seq=-1 if last is None else last.seq,
            first_at_ms=None if first is None else first.at_ms,
            last_at_ms=None if last is None else last.at_ms,
            incomplete=self.incomplete,
            first_seq=self.first_seq,
        )


class StaleIndex(Exception):
    """The `.idx` does not frame the lines it should: rebuild it."""


# Framing and the torn tail


def line_start(fd: int, end: int) -> int:
    """Where the line whose newline is at `end - 1` starts (0 for the first line). With
    `end = size + 1`, where the bytes after the last newline start."""
    pos = end - 1
    while pos > 0:
        low = max(0, pos - _CHUNK)
        newline = os.pread(fd, pos - low, low).rfind(b"\n")
        if newline >= 0:
            return low + newline + 1
        pos = low
    return 0


def line_at(fd: int, start: int, size: int) -> bytes:
    """The line that starts at `start`, with its newline (without, at a torn end)."""
    parts: list[bytes] = []
    pos = start
    while pos < size:
        chunk = os.pread(fd, min(_CHUNK, size - pos), pos)
        newline = chunk.find(b"\n")
        if newline >= 0:
            parts.append(chunk[: newline + 1])
            break
        parts.append(chunk)
        pos += len(chunk)
    return b"".join(parts)


def read_lines(fd: int, end: int) -> Iterator[bytes]:
    """The lines before `end` (which ends one), each with its newline, in order."""
    pos, carry = 0, b""
    while pos < end:
        chunk = carry + os.pread(fd, min(_SCAN_CHUNK, end - pos), pos)
        pos += len(chunk) - len(carry)
        lines = chunk.split(b"\n")
        carry = lines.pop()
        yield from (line + b"\n" for line in lines)


class Tail(msgspec.Struct):
    """The end of the whole, well-formed lines of a file, and the last of them."""

    end: int
    last_start: int
    last: Envelope | None


def find_tail(fd: int, size: int) -> Tail:
    """Bytes after the last newline are torn, and so is a last line that is not a JSON
    object with an envelope (a crash can leave garbage after the size grew): both are
    outside `end`."""
    end = line_start(fd, size + 1)
    while end > 0:
        start = line_start(fd, end)
        envelope = read_envelope(os.pread(fd, end - start, start))
        if envelope is not None:
            return Tail(end, start, envelope)
        end = start
    return Tail(0, 0, None)


# The index


def read_offset(idx_fd: int, index: int) -> int | None:
    raw = os.pread(idx_fd, OFFSET.size, index * OFFSET.size)
    return OFFSET.unpack(raw)[0] if len(raw) == OFFSET.size else None


def offsets_bytes(offsets: Sequence[int]) -> bytes:
    packed = array("Q", offsets)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def scan_offsets(fd: int, start: int, end: int) -> list[int]:
    """Start offsets of the lines in [start, end), which holds whole lines."""
    offsets = [start] if start < end else []
    pos = start
    while pos < end:
        chunk = os.pread(fd, min(_SCAN_CHUNK, end - pos), pos)
        newline = chunk.find(b"\n")
        while newline >= 0:
            if pos + newline + 1 < end:
                offsets.append(pos + newline + 1)
            newline = chunk.find(b"\n", newline + 1)
        pos += len(chunk)
    return offsets


def rebuild_index(fd: int, end: int, idx_path: str) -> int:
    """Write the index of the whole lines before `end` from scratch; its entry count."""
    offsets = scan_offsets(fd, 0, end)
    folder, name = os.path.split(idx_path)
    tmp = os.path.join(folder, f".{name}.tmp")
    with open(tmp, "wb") as file:
        file.write(offsets_bytes(offsets))
    os.rename(tmp, idx_path)
    return len(offsets)


def check_index(fd: int, tail: Tail, idx_path: str) -> int:
    """Make the index match the file's lines (trim, extend or rebuild); the line count. A
    line's seq does not say which line it is (a prune drops lines), so the index is trusted
    when its first offset is 0 and one of its offsets is the last line's."""
    try:
        idx_fd = os.open(idx_path, os.O_RDWR)
    except FileNotFoundError:
        return rebuild_index(fd, tail.end, idx_path)
    try:
        kept = os.fstat(idx_fd).st_size // OFFSET.size
        if tail.last is None:
            os.ftruncate(idx_fd, 0)
            return 0
        if kept > 0 and read_offset(idx_fd, 0) == 0:
            offset = _offset_reader(idx_fd)
            # Offsets grow along the file: an index longer than it holds the last line's.
            last = bisect_left(range(kept), tail.last_start, key=offset)
            if last < kept and offset(last) == tail.last_start:
                os.ftruncate(idx_fd, (last + 1) * OFFSET.size)
                return last + 1
            # The index lags the file (it is not fsynced): extend it from its last line on.
            last_start = offset(kept - 1)
            if 0 <= last_start < tail.end and starts_line(fd, last_start):
                line = line_at(fd, last_start, tail.end)
                if read_envelope(line) is not None and line.endswith(b"\n"):
                    more = scan_offsets(fd, last_start + len(line), tail.end)
                    if more and more[-1] == tail.last_start:
                        os.pwrite(idx_fd, offsets_bytes(more), kept * OFFSET.size)
                        os.ftruncate(idx_fd, (kept + len(more)) * OFFSET.size)
                        return kept + len(more)
    finally:
        os.close(idx_fd)
    return rebuild_index(fd, tail.end, idx_path)


def _offset_reader(idx_fd: int) -> Callable[[int], int]:
    def offset(index: int) -> int:
        found = read_offset(idx_fd, index)
        return -1 if found is None else found

    return offset


def starts_line(fd: int, offset: int) -> bool:
    return offset == 0 or os.pread(fd, 1, offset - 1) == b"\n"


def read_layout(fd: int, end: int, lines: int, idx_path: str) -> Layout:
    """The layout of a file's `lines` whole lines before `end`, read through its index at
    a few lines; StaleIndex when an offset it holds does not start an entry's line."""
    try:
        idx_fd = os.open(idx_path, os.O_RDONLY)
    except FileNotFoundError:
        raise StaleIndex from None
    try:

        def seq_at(line: int) -> int:
            start = read_offset(idx_fd, line)
            if start is None or not 0 <= start < end or not starts_line(fd, start):
                raise StaleIndex
            envelope = read_envelope(line_at(fd, start, end))
            if envelope is None:
                raise StaleIndex
            return envelope.seq

        return layout_by_search(lines, seq_at)
    finally:
        os.close(idx_fd)


def rebuilt_layout(fd: int, end: int, idx_path: str) -> Layout:
    """Build the index of the lines before `end` anew; the layout read through it."""
    return read_layout(fd, end, rebuild_index(fd, end, idx_path), idx_path)


class TracePaths(NamedTuple):
    """The files of one trace, as strings for `os` calls."""

    jsonl: str
    idx: str
    refs: str
    torn: str
    pruned: str

    @classmethod
    def of(cls, folder: str, trace: str) -> TracePaths:
        base = f"{folder}/{trace}"
        return cls(base + JSONL, base + IDX, base + REFS, base + TORN, f"{folder}/.{trace}{PRUNED}")


def blobs_beside(traces_folder: Path) -> BlobStore | None:
    root = traces_folder.parent / BLOBS_DIR
    return BlobStore(root, traces_folder.parent / FRAMES_DIR) if root.is_dir() else None


# The offline API of `holm trace FILE|DIR`.


def traces_folder(state_dir: Path) -> Path:
    """Where the trace files of a state dir are (its `traces/`); a folder without one is
    taken as a folder of `.jsonl` files."""
    return state_dir / TRACES_DIR if (state_dir / TRACES_DIR).is_dir() else state_dir


def trace_files(state_dir: Path) -> list[Path]:
    """The trace files of a state dir (its `traces/`), or of a folder of `.jsonl` files."""
    folder = traces_folder(state_dir)
    return sorted(path for path in folder.glob("*" + JSONL) if path.is_file())


class TraceLines(NamedTuple):
    """The whole lines of an offline read as stored, and what a `TraceRead` says of them."""

    lines: list[bytes]
    incomplete: bool
    first_seq: int


def read_trace_lines(path: Path, after: int | None = None, limit: int | None = None) -> TraceLines:
    """The lines of one trace file with seq > `after`, at most `limit`, as stored. Never
    changes the file; a torn last line is left out and makes the read `incomplete`."""
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        tail = find_tail(file.fileno(), size)
        data = file.read(tail.end)
        torn = file.read()
    # A writer that died leaves one line at most (bytes after the last newline, or a last
    # line of garbage where the size grew before the data came): lines before it that are
    # not entries either make a file that is not a trace, or a trace that was damaged.
    if b"\n" in torn[:-1]:
        count = torn.count(b"\n") + (not torn.endswith(b"\n"))
        raise CorruptLine(f"{path}: its last {count} lines are not entries of a trace")
    incomplete = tail.end < size or path.with_suffix(TORN).exists()
    lines = data.split(b"\n")[:-1]
    first = 0 if after is None else max(after + 1, 0)
    layout = layout_by_search(len(lines), lambda line: seq_of(lines[line]))
    ordered = all(0 <= a < b for a, b in pairwise([*layout.head, layout.first_seq]))
    start = layout.line_of(first) if ordered else 0
    # Seqs grow along every file holm writes; anything else is read the long way.
    before = seq_of(lines[start - 1]) if start > 0 else -1
    if before < first and (start == len(lines) or seq_of(lines[start]) >= first):
        wanted = lines[start:] if limit is None else lines[start : start + max(limit, 0)]
    else:
        wanted = [line for line in lines if seq_of(line) >= first]
        wanted = wanted if limit is None else wanted[: max(limit, 0)]
    return TraceLines(wanted, incomplete, layout.first_seq)


def read_trace_file(path: Path, after: int | None = None, limit: int | None = None) -> TraceRead:
    """The entries of one trace file with seq > `after`, at most `limit`, blobs resolved
    from the state dir's `blobs/` when it is there (`read_trace_lines`, decoded)."""
    read = read_trace_lines(path, after, limit)
    blobs = blobs_beside(path.parent)
    entries = []
    for line in read.lines:
        try:
            entries.append(decode_line(line, blobs))
        except CorruptLine as exc:
            raise CorruptLine(f"{path}: {exc}") from exc
    return TraceRead(entries=entries, incomplete=read.incomplete, first_seq=read.first_seq)


def seq_of(line: bytes) -> int:
    """The seq of a line, -1 when it has no envelope."""
    return (read_envelope(line) or Envelope(-1, 0)).seq


__all__ = [
    "BLOBS_DIR",
    "FRAMES_DIR",
    "IDX",
    "JSONL",
    "OFFSET",
    "PRUNED",
    "REFS",
    "TORN",
    "TRACES_DIR",
    "StaleIndex",
    "Tail",
    "TraceLines",
    "TracePaths",
    "TraceRead",
    "blobs_beside",
    "check_index",
    "find_tail",
    "line_at",
    "line_start",
    "offsets_bytes",
    "read_layout",
    "read_lines",
    "read_offset",
    "read_trace_file",
    "read_trace_lines",
    "rebuild_index",
    "rebuilt_layout",
    "scan_offsets",
    "seq_of",
    "starts_line",
    "trace_files",
    "traces_folder",
]
