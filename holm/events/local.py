"""The durable store: one JSONL file per trace in a state dir, with blobs and frames.

    <state>/LOCK                        flock'ed by the one server that writes here
    <state>/traces/<trace>.jsonl        the entries, one JSON line each, seq 0, 1, 2, …
    <state>/traces/<trace>.idx          byte offset of each line (u64 little-endian)
    <state>/traces/<trace>.blobs        the blobs the trace's lines refer to, one a line
    <state>/traces/<trace>.torn         bytes of a torn last line, cut away on open
    <state>/blobs/<2 hex>/<hex>         values spilled out of lines (see codec.py)
    <state>/frames/<trace>/<hash>.png   frames under their pixel hash

An append returns once its lines are written and fsynced. Appends are queued; one writer
takes everything queued, writes it, fsyncs each file it touched once and then answers all of
them, so concurrent appends share their fsyncs (group commit). File work runs in threads.

A writer killed mid-line leaves a torn last line: opening the store moves it to `.torn` and
cuts it from the trace, so it is never served; the trace reads as `incomplete` until its
next append. The `.idx` is not fsynced: it is checked against the file's tail on open and
rebuilt when it does not match, and a read that finds it wrong rebuilds it.

`read_trace_file` and `trace_files` read the same files offline, without a store and
without changing them (`holm trace FILE|DIR`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import struct
import sys
from array import array
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from holm.errors import Internal, Unavailable
from holm.events.blobs import (
    BlobStore,
    check_name,
    fsync_dir,
    is_safe_name,
    write_atomic,
    write_durably,
)
from holm.events.codec import (
    CorruptLine,
    Envelope,
    decode_line,
    decode_lines,
    encode_entry,
    needs_spill,
    read_envelope,
)
from holm.events.entries import Entry
from holm.events.store import PAGE_MAX, PruneReport, TraceInfo

TRACES_DIR = "traces"
BLOBS_DIR = "blobs"
FRAMES_DIR = "frames"
LOCK_FILE = "LOCK"
JSONL = ".jsonl"
IDX = ".idx"
REFS = ".blobs"
TORN = ".torn"

_OFFSET = struct.Struct("<Q")
_CHUNK = 1 << 16
_SCAN_CHUNK = 1 << 20
_T = TypeVar("_T")


class TraceRead(msgspec.Struct, kw_only=True):
    """What an offline read of a trace file gives: its entries, and whether a writer died
    mid-line (the torn line is left out)."""

    entries: list[Entry]
    incomplete: bool = False


# Reading a trace file: framing, the torn tail, the index. Blocking; called in threads.


def _line_start(fd: int, end: int) -> int:
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


def _line_at(fd: int, start: int, size: int) -> bytes:
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


class _Tail(msgspec.Struct):
    """The end of the whole, well-formed lines of a file, and the last of them."""

    end: int
    last_start: int
    last: Envelope | None


def _find_tail(fd: int, size: int) -> _Tail:
    """Bytes after the last newline are torn, and so is a last line that is not a JSON
    object with an envelope (a crash can leave garbage after the size grew): both are
    outside `end`."""
    end = _line_start(fd, size + 1)
    while end > 0:
        start = _line_start(fd, end)
        envelope = read_envelope(os.pread(fd, end - start, start))
        if envelope is not None:
            return _Tail(end, start, envelope)
        end = start
    return _Tail(0, 0, None)


def _read_offset(idx_fd: int, index: int) -> int | None:
    raw = os.pread(idx_fd, _OFFSET.size, index * _OFFSET.size)
    return _OFFSET.unpack(raw)[0] if len(raw) == _OFFSET.size else None


def _offsets_bytes(offsets: Sequence[int]) -> bytes:
    packed = array("Q", offsets)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def _scan_offsets(fd: int, start: int, end: int) -> list[int]:
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


def _rebuild_index(fd: int, end: int, idx_path: Path) -> int:
    """Write the index of the whole lines before `end` from scratch; its entry count."""
    offsets = _scan_offsets(fd, 0, end)
    tmp = idx_path.with_name(f".{idx_path.name}.tmp")
    tmp.write_bytes(_offsets_bytes(offsets))
    tmp.rename(idx_path)
    return len(offsets)


def _check_index(fd: int, tail: _Tail, idx_path: Path) -> int:
    """Make the index match the file's lines (trim, extend or rebuild); the entry count."""
    count = 0 if tail.last is None else tail.last.seq + 1
    try:
        idx_fd = os.open(idx_path, os.O_RDWR)
    except FileNotFoundError:
        return _rebuild_index(fd, tail.end, idx_path)
    try:
        kept = os.fstat(idx_fd).st_size // _OFFSET.size
        if count == 0 and tail.end == 0:
            os.ftruncate(idx_fd, 0)
            return 0
        if kept >= count > 0 and (
            _read_offset(idx_fd, 0) == 0 and _read_offset(idx_fd, count - 1) == tail.last_start
        ):
            os.ftruncate(idx_fd, count * _OFFSET.size)
            return count
        if 0 < kept < count:
            # The index lags the file (it is not fsynced): extend it from its last line on.
            last_start = _read_offset(idx_fd, kept - 1)
            if last_start is not None and last_start < tail.end:
                line = _line_at(fd, last_start, tail.end)
                envelope = read_envelope(line)
                if envelope is not None and envelope.seq == kept - 1 and line.endswith(b"\n"):
                    more = _scan_offsets(fd, last_start + len(line), tail.end)
                    if kept + len(more) == count and more and more[-1] == tail.last_start:
                        os.pwrite(idx_fd, _offsets_bytes(more), kept * _OFFSET.size)
                        os.ftruncate(idx_fd, count * _OFFSET.size)
                        return count
    finally:
        os.close(idx_fd)
    return _rebuild_index(fd, tail.end, idx_path)


def _trace_paths(folder: Path, trace: str) -> tuple[Path, Path, Path, Path]:
    """The `.jsonl`, `.idx`, `.blobs` and `.torn` files of a trace."""
    return (
        folder / (trace + JSONL),
        folder / (trace + IDX),
        folder / (trace + REFS),
        folder / (trace + TORN),
    )


def _blobs_beside(traces_folder: Path) -> BlobStore | None:
    root = traces_folder.parent / BLOBS_DIR
    return BlobStore(root, traces_folder.parent / FRAMES_DIR) if root.is_dir() else None


# The offline API of `holm trace FILE|DIR`.


def trace_files(state_dir: Path) -> list[Path]:
    """The trace files of a state dir (its `traces/`), or of a folder of `.jsonl` files."""
    folder = state_dir / TRACES_DIR if (state_dir / TRACES_DIR).is_dir() else state_dir
    return sorted(path for path in folder.glob("*" + JSONL) if path.is_file())


def read_trace_file(path: Path, after: int | None = None, limit: int | None = None) -> TraceRead:
    """The entries of one trace file with seq > `after`, at most `limit`, blobs resolved
    from the state dir's `blobs/` when it is there. Never changes the file; a torn last line
    is left out and makes the read `incomplete`."""
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        tail = _find_tail(file.fileno(), size)
        data = file.read(tail.end)
    incomplete = tail.end < size or path.with_suffix(TORN).exists()
    lines = data.splitlines()
    first = 0 if after is None else max(after + 1, 0)
    # Line i holds seq i in every file holm writes; anything else is read the long way.
    if first < len(lines) and (read_envelope(lines[first]) or Envelope(-1, 0)).seq == first:
        wanted = lines[first:] if limit is None else lines[first : first + max(limit, 0)]
    else:
        wanted = [line for line in lines if (read_envelope(line) or Envelope(-1, 0)).seq >= first]
        wanted = wanted if limit is None else wanted[: max(limit, 0)]
    blobs = _blobs_beside(path.parent)
    entries = []
    for line in wanted:
        try:
            entries.append(decode_line(line, blobs))
        except CorruptLine as exc:
            raise CorruptLine(f"{path}: {exc}") from exc
    return TraceRead(entries=entries, incomplete=incomplete)


# The store.


class _Trace(msgspec.Struct):
    """The loop's view of one trace file. Changed only on the event loop, after the
    writer's thread has made a change durable; a read never looks past `size`."""

    name: str
    count: int = 0
    size: int = 0
    first_at_ms: int | None = None
    last_at_ms: int | None = None
    incomplete: bool = False

    def info(self) -> TraceInfo:
        return TraceInfo(
            trace=self.name,
            entries=self.count,
            max_seq=self.count - 1,
            first_at_ms=self.first_at_ms,
            last_at_ms=self.last_at_ms,
            incomplete=self.incomplete,
        )


class _Append:
    __slots__ = ("entries", "future", "trace")

    def __init__(self, trace: str, entries: Sequence[Entry], future: asyncio.Future[Any]):
        self.trace = trace
        self.entries = entries
        self.future = future


class _Work:
    """What the writer's thread does to one trace in one commit."""

    __slots__ = ("clear_torn", "count", "lines", "name", "size")

    def __init__(self, trace: _Trace) -> None:
        self.name = trace.name
        self.count = trace.count
        self.size = trace.size
        self.clear_torn = trace.incomplete
        # Encoded lines; an entry whose line must spill is encoded in the thread.
        self.lines: list[bytes | Entry] = []


class _RefCollector:
    """A blob sink that remembers what it was given, for the trace's `.blobs` list."""

    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs
        self.refs: list[str] = []

    def put(self, data: bytes) -> str:
        ref = self.blobs.put(data)
        self.refs.append(ref)
        return ref


class _StaleIndex(Exception):
    pass


class LocalStore:
    """The `local` backend (`HOLM_STORAGE_BACKEND=local`). See the module docstring."""

    def __init__(
        self,
        state_dir: Path,
        *,
        keep_frames_secs: int = 2 * 3600,
        keep_entries_secs: int = 7 * 24 * 3600,
        group_commit: bool = True,
    ) -> None:
        self.state_dir = state_dir
        self.keep_frames_secs = keep_frames_secs
        self.keep_entries_secs = keep_entries_secs
        self.group_commit = group_commit
        self._folder = state_dir / TRACES_DIR
        for folder in (self._folder, state_dir / BLOBS_DIR, state_dir / FRAMES_DIR):
            folder.mkdir(parents=True, exist_ok=True)
        self._lock_fd = _lock_state_dir(state_dir)
        self._blobs = BlobStore(state_dir / BLOBS_DIR, state_dir / FRAMES_DIR)
        self._traces: dict[str, _Trace] = {}
        self._loaded: asyncio.Future[None] | None = None
        self._pending: list[_Append] = []
        self._wake = asyncio.Event()
        # Held by whatever changes files: a commit, an index rebuild, a prune.
        self._write_lock = asyncio.Lock()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False
        self._write_pool = ThreadPoolExecutor(1, thread_name_prefix="holm-store-write")
        self._fsync_pool = ThreadPoolExecutor(8, thread_name_prefix="holm-store-fsync")
        self._read_pool = ThreadPoolExecutor(4, thread_name_prefix="holm-store-read")
        # Counters for bench/store.py.
        self.commits = 0
        self.fsyncs = 0

    # TraceStore

    async def append(self, trace: str, entries: Sequence[Entry]) -> list[Entry]:
        check_name("trace", trace)
        if self._closed:
            raise Unavailable("the trace store is closed")
        if not entries:
            return []
        await self._load()
        future: asyncio.Future[list[Entry]] = asyncio.get_running_loop().create_future()
        self._pending.append(_Append(trace, entries, future))
        self._wake.set()
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_forever(), name="holm-store-writer")
        # The append is written even when its caller stops waiting: the step happened.
        return await asyncio.shield(future)

    async def read(
        self, trace: str, after: int | None = None, limit: int = PAGE_MAX
    ) -> list[Entry]:
        await self._load()
        for attempt in range(2):
            state = self._traces.get(trace)
            first = 0 if after is None else max(after + 1, 0)
            if state is None or limit <= 0 or first >= state.count:
                return []
            last = min(state.count, first + limit)
            try:
                return await self._in(
                    self._read_pool, self._read_page, trace, first, last, state.count, state.size
                )
            except FileNotFoundError:
                return []  # pruned while being read
            except _StaleIndex:
                if attempt == 0:
                    await self._rebuild(trace)
        raise Internal(f"trace {trace} does not hold seq {first} to {last - 1} in order")

    async def max_seq(self, trace: str) -> int:
        await self._load()
        state = self._traces.get(trace)
        return -1 if state is None else state.count - 1

    async def info(self, trace: str) -> TraceInfo | None:
        await self._load()
        state = self._traces.get(trace)
        return None if state is None else state.info()

    async def traces(self) -> list[TraceInfo]:
        await self._load()
        return [self._traces[name].info() for name in sorted(self._traces)]

    async def put_frame(self, trace: str, frame_hash: str, png: bytes) -> None:
        await self._in(self._read_pool, self._blobs.put_frame, trace, frame_hash, png)

    async def get_frame(self, trace: str, frame_hash: str) -> bytes | None:
        return await self._in(self._read_pool, self._blobs.get_frame, trace, frame_hash)

    async def prune(self, now_ms: int) -> PruneReport:
        await self._load()
        async with self._write_lock:
            old = [
                state
                for state in self._traces.values()
                if state.last_at_ms is not None
                and state.last_at_ms < now_ms - self.keep_entries_secs * 1000
            ]
            report = await self._in(self._write_pool, self._prune_files, now_ms, old)
            for state in old:
                del self._traces[state.name]
        return report

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        if self._writer is not None:
            await self._writer
        for pool in (self._write_pool, self._fsync_pool, self._read_pool):
            await asyncio.to_thread(pool.shutdown)
        os.close(self._lock_fd)

    # The writer

    async def _write_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                if self.group_commit:
                    batch, self._pending = self._pending, []
                else:
                    batch = [self._pending.pop(0)]
                await self._commit(batch)
            if self._closed:
                return

    async def _commit(self, batch: list[_Append]) -> None:
        async with self._write_lock:
            works: dict[str, _Work] = {}
            done: list[tuple[_Append, list[Entry]]] = []
            for append in batch:
                work = works.get(append.trace)
                if work is None:
                    state = self._traces.get(append.trace) or _Trace(append.trace)
                    work = works[append.trace] = _Work(state)
                try:
                    seq = work.count + len(work.lines)
                    entries = [
                        msgspec.structs.replace(entry, seq=seq + i)
                        for i, entry in enumerate(append.entries)
                    ]
                    lines = [encode_entry(entry) for entry in entries]
                except Exception as exc:  # an entry that cannot be written fails its append
                    _fail(append.future, exc)
                    continue
                work.lines.extend(
                    entry if needs_spill(line) else line
                    for entry, line in zip(entries, lines, strict=True)
                )
                done.append((append, entries))
            try:
                sizes = await self._in(self._write_pool, self._write, list(works.values()))
            except Exception as exc:
                failure = Unavailable(f"the trace store could not write: {exc}")
                for append, _ in done:
                    _fail(append.future, failure)
                return
            for work, size in zip(works.values(), sizes, strict=True):
                state = self._traces.setdefault(work.name, _Trace(work.name))
                state.count = work.count + len(work.lines)
                state.size = size
                state.incomplete = False
            for append, entries in done:
                state = self._traces[append.trace]
                if state.first_at_ms is None:
                    state.first_at_ms = entries[0].at_ms
                state.last_at_ms = entries[-1].at_ms
                if not append.future.done():
                    append.future.set_result(entries)

    def _write(self, works: list[_Work]) -> list[int]:
        """Write, fsync and index every trace of one commit (in the writer's thread). On
        failure every file is cut back to where it was, so no seq is half given."""
        opened: list[tuple[_Work, int]] = []
        sizes: list[int] = []
        new_files = False
        try:
            for work in works:
                jsonl, _, refs_path, _ = _trace_paths(self._folder, work.name)
                sink = _RefCollector(self._blobs)
                lines = [
                    line if isinstance(line, bytes) else encode_entry(line, sink)
                    for line in work.lines
                ]
                if sink.refs:
                    # Listed before the line that needs them is durable, so a prune that
                    # keeps the trace keeps its blobs.
                    new_files |= not refs_path.exists()
                    listed = "".join(ref + "\n" for ref in sink.refs).encode()
                    write_durably(refs_path, listed, os.O_APPEND)
                    self.fsyncs += 1
                new_files |= work.size == 0
                fd = os.open(jsonl, os.O_WRONLY | os.O_CREAT, 0o644)
                opened.append((work, fd))
                data = b"".join(lines)
                _pwrite_all(fd, data, work.size)
                if os.fstat(fd).st_size > work.size + len(data):
                    # Left by a failed commit that could not be cut back.
                    os.ftruncate(fd, work.size + len(data))
                sizes.append(work.size + len(data))
                work.lines = list(lines)
            fds = [fd for _, fd in opened]
            if len(fds) == 1:
                os.fdatasync(fds[0])
            else:
                list(self._fsync_pool.map(os.fdatasync, fds))
            if new_files:
                fsync_dir(self._folder)
            self.fsyncs += len(fds) + new_files
            self.commits += 1
        except BaseException:
            for work, fd in opened:
                # The original error is the one to report.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, work.size)
            raise
        finally:
            for _, fd in opened:
                os.close(fd)
        for work, size in zip(works, sizes, strict=True):
            # The lines are durable; a stale index is found and rebuilt on use.
            with contextlib.suppress(OSError):
                self._index_appended(work, size)
        return sizes

    def _index_appended(self, work: _Work, size: int) -> None:
        """Append the offsets of a commit's lines to the trace's index (not fsynced: it is
        rebuilt from the file when it does not match), and clear the torn mark."""
        jsonl, idx_path, _, torn = _trace_paths(self._folder, work.name)
        offsets = []
        offset = work.size
        for line in work.lines:
            assert isinstance(line, bytes)
            offsets.append(offset)
            offset += len(line)
        fd = os.open(idx_path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size == work.count * _OFFSET.size:
                os.pwrite(fd, _offsets_bytes(offsets), work.count * _OFFSET.size)
            else:
                with jsonl.open("rb") as file:
                    _rebuild_index(file.fileno(), size, idx_path)
        finally:
            os.close(fd)
        if work.clear_torn:
            torn.unlink(missing_ok=True)

    # Reads

    def _read_page(self, trace: str, first: int, last: int, count: int, size: int) -> list[Entry]:
        jsonl, idx_path, _, _ = _trace_paths(self._folder, trace)
        with jsonl.open("rb") as file:
            try:
                idx_fd = os.open(idx_path, os.O_RDONLY)
            except FileNotFoundError:
                raise _StaleIndex from None
            try:
                start = _read_offset(idx_fd, first)
                end = size if last == count else _read_offset(idx_fd, last)
            finally:
                os.close(idx_fd)
            if start is None or end is None or not 0 <= start < end <= size:
                raise _StaleIndex
            # One byte before the page must end a line, or the index points mid-line.
            before = max(start - 1, 0)
            chunk = os.pread(file.fileno(), end - before, before)
        if start > 0 and chunk[:1] != b"\n":
            raise _StaleIndex
        try:
            entries = decode_lines(chunk[start - before :], self._blobs)
        except CorruptLine:
            raise _StaleIndex from None
        if len(entries) != last - first or any(
            entry.seq != first + i for i, entry in enumerate(entries)
        ):
            raise _StaleIndex
        return entries

    async def _rebuild(self, trace: str) -> None:
        async with self._write_lock:
            state = self._traces.get(trace)
            if state is not None:
                await self._in(self._write_pool, self._rebuild_sync, trace, state.size)

    def _rebuild_sync(self, trace: str, size: int) -> None:
        jsonl, idx_path, _, _ = _trace_paths(self._folder, trace)
        with jsonl.open("rb") as file:
            _rebuild_index(file.fileno(), size, idx_path)

    # Opening

    async def _load(self) -> None:
        """Open every trace file once, before the first operation: cut torn lines, check
        the indexes. Done in the writer's thread, so that no commit runs beside it."""
        if self._loaded is None:
            self._loaded = asyncio.get_running_loop().create_future()
            try:
                traces = await self._in(self._write_pool, self._open_all)
            except BaseException as exc:
                self._loaded.set_exception(exc)
                raise
            self._traces.update((state.name, state) for state in traces)
            self._loaded.set_result(None)
        await asyncio.shield(self._loaded)

    def _open_all(self) -> list[_Trace]:
        traces = []
        for path in trace_files(self.state_dir):
            name = path.name.removesuffix(JSONL)
            if is_safe_name(name):
                traces.append(self._open_trace(name))
        return traces

    def _open_trace(self, name: str) -> _Trace:
        jsonl, idx_path, _, torn_path = _trace_paths(self._folder, name)
        fd = os.open(jsonl, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            tail = _find_tail(fd, size)
            incomplete = torn_path.exists()
            if tail.end < size:
                torn = os.pread(fd, size - tail.end, tail.end)
                earlier = torn_path.read_bytes() if incomplete else b""
                write_atomic(torn_path, earlier + torn)
                os.ftruncate(fd, tail.end)
                os.fsync(fd)
                incomplete = True
            count = _check_index(fd, tail, idx_path)
            if tail.last is None:
                return _Trace(name, incomplete=incomplete)
            first = read_envelope(_line_at(fd, 0, tail.end))
            return _Trace(
                name,
                count=count,
                size=tail.end,
                first_at_ms=None if first is None else first.at_ms,
                last_at_ms=tail.last.at_ms,
                incomplete=incomplete,
            )
        finally:
            os.close(fd)

    # Retention

    def _prune_files(self, now_ms: int, old: list[_Trace]) -> PruneReport:
        report = PruneReport()
        report.frames = self._blobs.remove_frames_older_than(now_ms - self.keep_frames_secs * 1000)
        for state in old:
            for path in _trace_paths(self._folder, state.name):
                path.unlink(missing_ok=True)
            report.frames += self._blobs.remove_frames_of(state.name)
            report.entries += state.count
            report.boxes += 1
        if old:
            fsync_dir(self._folder)
        kept_refs: set[str] = set()
        for path in self._folder.glob("*" + REFS):
            kept_refs.update(path.read_text().split())
        self._blobs.remove_older_than(now_ms - self.keep_entries_secs * 1000, kept_refs)
        return report

    async def _in(self, pool: ThreadPoolExecutor, func: Callable[..., _T], *args: Any) -> _T:
        return await asyncio.get_running_loop().run_in_executor(pool, func, *args)


def _lock_state_dir(state_dir: Path) -> int:
    fd = os.open(state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise Unavailable(f"{state_dir} is in use by another holmd") from None
    return fd


def _pwrite_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view = view[written:]
        offset += written


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


__all__ = ["LocalStore", "TraceRead", "read_trace_file", "trace_files"]
