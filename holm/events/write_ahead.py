"""The local store's write-ahead journal: one file that every commit's lines go through
first, for all the traces the commit touches, with one fdatasync; the trace files are
written after it and fsynced only at a checkpoint (local.py).

    <state>/journal/<number, 16 hex>.wal    segments, oldest first

A segment is a run of records, each the lines one commit gave one trace:

    crc32 u32 | length u32 | lsn u64 | offset u64 | name length u16 | name | lines

`crc32` covers what follows `length` (`length` bytes); `offset` is where the lines go in
the trace's `.jsonl`; `lsn` numbers commits: the records of one commit share one, a later
commit has a greater one, and a failed commit's is never given again. A reader stops at the
first record that is cut short, fails its crc, or has a smaller lsn than the one before:
a tail torn by a crash, or what a failed commit left beyond the end, which the next commit
wrote over in part.

A segment only grows while it is the newest. A checkpoint starts a new one, makes the trace
files durable and then removes the older segments, whose every record is in those files by
then. Everything here blocks; local.py calls it from its writer's thread, but for `pack`
and `write` of the usual commit, which only reach the page cache.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from holm.events.blobs import fsync_dir

log = logging.getLogger(__name__)

JOURNAL_DIR = "journal"
SUFFIX = ".wal"
# A segment past this starts a checkpoint: what a start-up replays is bounded by about it.
SEGMENT_BYTES = 32 << 20

_FRAME = struct.Struct("<II")
_BODY = struct.Struct("<QQH")


class Record(NamedTuple):
    """The lines one commit gave one trace, and where they go in its file."""

    lsn: int
    trace: str
    offset: int
    lines: bytes


def pack_record(lsn: int, trace: str, offset: int, lines: bytes) -> bytes:
    name = trace.encode()
    body = _BODY.pack(lsn, offset, len(name)) + name + lines
    return _FRAME.pack(zlib.crc32(body), len(body)) + body


def read_records(data: bytes, after_lsn: int = 0) -> tuple[list[Record], int]:
    """The whole records at the start of `data` whose lsns do not go down from `after_lsn`,
    and where they end."""
    records: list[Record] = []
    pos, last = 0, after_lsn
    while pos + _FRAME.size <= len(data):
        crc, length = _FRAME.unpack_from(data, pos)
        start, end = pos + _FRAME.size, pos + _FRAME.size + length
        if length < _BODY.size or end > len(data):
            break
        body = memoryview(data)[start:end]
        if zlib.crc32(body) != crc:
            break
        lsn, offset, name_length = _BODY.unpack_from(body)
        if lsn < last or _BODY.size + name_length > length:
            break
        name_end = _BODY.size + name_length
        try:
            trace = bytes(body[_BODY.size : name_end]).decode()
        except UnicodeDecodeError:
            break
        records.append(Record(lsn, trace, offset, bytes(body[name_end:])))
        pos, last = end, lsn
    return records, pos


class WriteAhead:
    """The segments of one state dir's journal; the newest is written at its end."""

    def __init__(self, folder: Path, most_bytes: int = SEGMENT_BYTES) -> None:
        self.folder = folder
        self.most_bytes = most_bytes
        folder.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = None
        self._path: Path | None = None
        self.size = 0
        self._next_lsn = 1
        self._next_segment = 1
        self._found: list[Path] = []

    # Opening

    def recover(self) -> list[Record]:
        """Every record of the segments on disk, in order (before `begin`)."""
        records: list[Record] = []
        self._found = self._segments()
        if self._found:
            self._next_segment = int(self._found[-1].stem, 16) + 1
        for path in self._found:
            data = path.read_bytes()
            found, end = read_records(data, records[-1].lsn if records else 0)
            if end < len(data):
                # Torn by a crash, or left by a failed commit: nothing after it was answered.
                log.info("journal %s: %d bytes after its last whole record", path, len(data) - end)
            records.extend(found)
        if records:
            self._next_lsn = records[-1].lsn + 1
        return records

    def begin(self) -> None:
        """Start a new segment and remove those `recover` read, whose records the caller
        has made durable in the trace files."""
        self._start_segment()
        self.remove(self._found)
        self._found = []

    # Commits

    def pack(self, parts: Iterable[tuple[str, int, bytes]]) -> bytes:
        """One commit's records: (trace, offset in its file, lines) each."""
        lsn = self._next_lsn
        self._next_lsn += 1
        return b"".join(pack_record(lsn, trace, offset, lines) for trace, offset, lines in parts)

    def write(self, data: bytes) -> int:
        """Write a commit's records at the end (not synced); where they start."""
        fd = self.fd
        start = self.size
        view, offset = memoryview(data), start
        try:
            while view:
                written = os.pwrite(fd, view, offset)
                view, offset = view[written:], offset + written
        except BaseException:
            self.cut_back(start)
            raise
        self.size = start + len(data)
        return start

    def sync(self) -> None:
        os.fdatasync(self.fd)

    def cut_back(self, start: int) -> None:
        """Drop a failed commit's records: the next commit writes where they began."""
        self.size = start
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, start)

    @property
    def fd(self) -> int:
        assert self._fd is not None, "the journal is begun before it is written"
        return self._fd

    @property
    def full(self) -> bool:
        return self.size >= self.most_bytes

    # Checkpoints

    def rotate(self) -> list[Path]:
        """Start a new segment; the older ones, to remove once the trace files are synced."""
        older = [path for path in self._segments() if path != self._path]
        if self._path is not None:
            older.append(self._path)
        self._start_segment()
        return sorted(older)

    def retire(self) -> list[Path]:
        """Stop writing (the store is closing); every segment, to remove once the trace
        files are synced."""
        self._close()
        return self._segments()

    def remove(self, paths: Iterable[Path]) -> None:
        removed = False
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed = True
        if removed:
            # Gone for good before anything can make their records wrong (a prune).
            fsync_dir(self.folder)

    def close(self) -> None:
        self._close()

    def _start_segment(self) -> None:
        path = self.folder / f"{self._next_segment:016x}{SUFFIX}"
        self._next_segment += 1
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            # The segment must outlive a crash before the first record in it is answered.
            fsync_dir(self.folder)
        except BaseException:
            os.close(fd)
            raise
        self._close()
        self._fd, self._path, self.size = fd, path, 0

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd, self._path = None, None

    def _segments(self) -> list[Path]:
        return sorted(path for path in self.folder.glob("*" + SUFFIX) if _is_segment(path))


def _is_segment(path: Path) -> bool:
    return len(path.stem) == 16 and all(char in "0123456789abcdef" for char in path.stem)


def by_trace(records: Iterable[Record]) -> Iterator[tuple[str, list[Record]]]:
    """The records grouped by trace, each group in journal order."""
    groups: dict[str, list[Record]] = {}
    for record in records:
        groups.setdefault(record.trace, []).append(record)
    yield from groups.items()


__all__ = [
    "JOURNAL_DIR",
    "SEGMENT_BYTES",
    "Record",
    "WriteAhead",
    "by_trace",
    "pack_record",
    "read_records",
]
