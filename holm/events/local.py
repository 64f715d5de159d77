"""The durable store (`HOLM_STORAGE_BACKEND=local`): one JSONL file per trace in a state
dir, with blobs and frames; the layout is in trace_file.py. `<state>/LOCK` is flock'ed by
the one server that writes there.

An append returns once its lines are in the journal (write_ahead.py) and it is fdatasynced.
Appends are queued; one writer takes everything queued, gives seqs, writes the commit's
records to the journal, writes the lines to the trace files (the page cache: they are not
fsynced) while the disk syncs the journal, and then answers all of them: concurrent appends
share one fdatasync however many traces they touch (group commit). A checkpoint, when the
journal's newest segment is full, starts a new segment, fsyncs the trace files written
since, and removes the older segments; closing the store and a prune make one too. Opening
the store replays the journal into the trace files first: each record's lines written where
it says, so a commit that was answered but whose lines a crash kept from its trace file (or
tore there) is whole again. docs/storage.md says what a crash at each point leaves.

The usual commit runs on the loop: the files of its traces are open and its lines need no
blob, so its journal records and lines are writes of a few hundred bytes a trace to the page
cache, and its fdatasync is Linux AIO's, told to the loop by an eventfd (aio_sync.py), which
spares the thread's wake-up and the loop's after it. Any other commit (a file to make, a
line to spill to a blob, a torn mark to clear, no AIO) runs whole in the writer's thread.

Opening the store then opens every trace file once: a torn last line that the journal did not
mend (a file changed by hand, a crash of an older holm) is moved to `.torn` and cut away, so
it is never served, and the trace reads as `incomplete` until its next append. The `.idx` is
not fsynced: it is checked against the file's tail on open, and a read that finds it wrong
rebuilds it. Its offsets are written INDEX_BATCH at a time, and read from memory
(`_Trace.unindexed`) until they are.

A prune by age (pruning.py) makes a checkpoint, then writes what a trace keeps to a new file
beside it, fsyncs it and renames it over the old one, so a crash leaves one or the other
whole. It holds the writer's lock meanwhile: appends wait for it, then land in the new file.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import msgspec

from holm.errors import Internal, Unavailable
from holm.events.aio_sync import AioSync, NotSubmitted
from holm.events.blobs import (
    BlobStore,
    check_name,
    fsync_dir,
    is_safe_name,
    write_all,
    write_atomic,
    write_durably,
)
from holm.events.codec import (
    CorruptLine,
    blob_refs,
    decode_line,
    decode_lines,
    encode_entry,
    needs_spill,
    read_envelope,
)
from holm.events.group_commit import Append, AppendQueue
from holm.events.pruning import KeepEntries, Layout, keep_none
from holm.events.store import TraceInfo
from holm.events.trace_file import (
    BLOBS_DIR,
    FRAMES_DIR,
    OFFSET,
    REFS,
    TORN,
    TRACES_DIR,
    StaleIndex,
    TracePaths,
    TraceRead,
    check_index,
    find_tail,
    line_at,
    offsets_bytes,
    read_layout,
    read_lines,
    read_offset,
    read_trace_file,
    rebuilt_layout,
    seq_of,
    trace_files,
)
from holm.events.write_ahead import JOURNAL_DIR, SEGMENT_BYTES, Record, WriteAhead, by_trace
from holm.wire.api import PruneReport
from holm.wire.entries import PAGE_MAX, SERVER_TRACE, Entry

log = logging.getLogger(__name__)

LOCK_FILE = "LOCK"
# A commit that touches at most this many traces writes their files on the loop, while the
# disk syncs its journal (two writes to the page cache a trace, some 10 µs); one that
# touches more does it in the writer's thread, where the loop need not wait for it. (A
# thread beside the loop costs more: the loop waits for the GIL after each system call.)
LOOP_TRACES = 128
# Files the writer keeps open between commits (two per trace), least recently used closed.
OPEN_TRACES = 256
# Offsets held back from a trace's index before they are written in one go: a trace that
# gets one line a commit writes its index every this many commits, not each one.
INDEX_BATCH = 64
_COPY_CHUNK = 1 << 20
# The journal's records of frames (`_frame_records`) are named with this before the trace.
FRAME_RECORD = "frame/"

_T = TypeVar("_T")


class _Trace(msgspec.Struct):
    """The loop's view of one trace file. Changed only on the event loop, after the
    writer's thread has made a change durable; a read never looks past `size`."""

    name: str
    layout: Layout = msgspec.field(default_factory=lambda: Layout([]))
    size: int = 0
    first_at_ms: int | None = None
    last_at_ms: int | None = None
    incomplete: bool = False
    # Where its last lines start that the writer holds back from the `.idx` (_Held.pending):
    # a read of those lines takes them from here.
    unindexed: list[int] = msgspec.field(default_factory=list)

    def info(self) -> TraceInfo:
        return TraceInfo(
            trace=self.name,
            entries=self.layout.lines,
            max_seq=self.layout.next_seq - 1,
            first_seq=self.layout.first_seq,
            first_at_ms=self.first_at_ms,
            last_at_ms=self.last_at_ms,
            incomplete=self.incomplete,
        )


class _Work:
    """What the writer's thread does to one trace in one commit."""

    __slots__ = (
        "_data",
        "clear_torn",
        "count",
        "lines",
        "name",
        "next_seq",
        "offsets",
        "size",
        "unindexed",
    )

    def __init__(self, trace: _Trace) -> None:
        self.name = trace.name
        # Lines in the file, and the seq the first new one gets.
        self.count = trace.layout.lines
        self.next_seq = trace.layout.next_seq
        self.size = trace.size
        self.clear_torn = trace.incomplete
        # Encoded lines; an entry whose line must spill is encoded in the thread.
        self.lines: list[bytes | Entry] = []
        self._data: bytes | None = None
        # Where the new lines start, and how many of the trace's last lines the index file
        # lacks after the commit (its writer holds them back); set as they are indexed.
        self.offsets: list[int] = []
        self.unindexed = 0

    def data(self) -> bytes:
        """The lines, once every one is encoded, as they are written."""
        if self._data is None:
            lines = [line for line in self.lines if isinstance(line, bytes)]
            assert len(lines) == len(self.lines), "every line is encoded before it is written"
            self._data = b"".join(lines)
        return self._data


class _RefCollector:
    """A blob sink that remembers what it was given, for the trace's `.blobs` list."""

    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs
        self.refs: list[str] = []

    def put(self, data: bytes) -> str:
        ref = self.blobs.put(data)
        self.refs.append(ref)
        return ref


class LocalStore:
    """The `local` backend (`HOLM_STORAGE_BACKEND=local`). See the module docstring."""

    def __init__(
        self,
        state_dir: Path,
        *,
        keep_frames_secs: int = 2 * 3600,
        keep_entries_secs: int = 7 * 24 * 3600,
        group_commit: bool = True,
        aio: bool = True,
        journal_bytes: int = SEGMENT_BYTES,
    ) -> None:
        self.state_dir = state_dir
        self.keep_frames_secs = keep_frames_secs
        self.keep_entries_secs = keep_entries_secs
        for folder in (TRACES_DIR, BLOBS_DIR, FRAMES_DIR):
            (state_dir / folder).mkdir(parents=True, exist_ok=True)
        self._folder = str(state_dir / TRACES_DIR)
        self._lock_fd = _lock_state_dir(state_dir)
        self._blobs = BlobStore(state_dir / BLOBS_DIR, state_dir / FRAMES_DIR)
        self._traces: dict[str, _Trace] = {}
        self._loaded: asyncio.Future[None] | None = None
        self._queue = AppendQueue(self._commit, group_commit=group_commit, name="holm-store-writer")
        # Held by whatever changes files: a commit, an index rebuild, a prune.
        self._write_lock = asyncio.Lock()
        self._closed = False
        self._write_pool = ThreadPoolExecutor(1, thread_name_prefix="holm-store-write")
        # Concurrent fsyncs of several files share the file system's journal commits.
        self._fsync_pool = ThreadPoolExecutor(32, thread_name_prefix="holm-store-fsync")
        self._read_pool = ThreadPoolExecutor(4, thread_name_prefix="holm-store-read")
        # A checkpoint syncs the trace files beside the commits that go on meanwhile.
        self._checkpoint_pool = ThreadPoolExecutor(1, thread_name_prefix="holm-store-checkpoint")
        self._files = _OpenFiles(self._folder)
        self._journal = WriteAhead(state_dir / JOURNAL_DIR, journal_bytes)
        # The traces written since the journal's newest segment began: a checkpoint's work.
        self._dirty: set[str] = set()
        # Frames put since the last commit began, kept here (a read finds them): the next
        # commit journals them with its lines (`_frame_records`), so the one fdatasync that
        # makes a step's entries durable makes the frame before it durable too, and writes
        # their files while the disk syncs. By path: (trace, frame hash, PNG); those of the
        # commit under way, until their files are written, in `_frames_writing`.
        self._frames_ahead: dict[str, tuple[str, str, bytes]] = {}
        self._frames_writing: dict[str, tuple[str, str, bytes]] = {}
        # The frame files journaled since the newest segment began: a checkpoint syncs them.
        self._dirty_frames: set[str] = set()
        self._checkpointing: asyncio.Future[None] | None = None
        # Set when a failed commit could not be taken back: every append fails after it.
        self._broken: str | None = None
        # Linux AIO's fdatasync for the usual commit (None: threads only), made on the
        # loop at the first commit; `aio=False` keeps every commit in the thread.
        self._aio: AioSync | None = None
        self._aio_wanted = aio
        # Counters for bench/store.py (and the commits synced by AIO, for the tests).
        self.commits = 0
        self.fsyncs = 0
        self.aio_commits = 0
        self.checkpoints = 0
        # Lines the journal gave back to the trace files on open, and frame files.
        self.replayed = 0
        self.replayed_frames = 0

    # TraceStore

    async def append(self, trace: str, entries: Sequence[Entry]) -> list[Entry]:
        if trace not in self._traces:
            check_name("trace", trace)
        if self._closed:
            raise Unavailable("the trace store is closed")
        if not entries:
            return []
        await self._load()
        return await self._queue.put(trace, entries)

    async def read(
        self, trace: str, after: int | None = None, limit: int = PAGE_MAX
    ) -> list[Entry]:
        await self._load()
        for attempt in range(2):
            state = self._traces.get(trace)
            if state is None or limit <= 0:
                return []
            layout, count = state.layout, state.layout.lines
            first = 0 if after is None else layout.line_of(max(after + 1, 0))
            if first >= count:
                return []
            seqs = [layout.seq_at(line) for line in range(first, min(count, first + limit))]
            tail = _Tail(count - len(state.unindexed), tuple(state.unindexed))
            try:
                return await self._in(
                    self._read_pool, self._read_page, trace, first, seqs, count, state.size, tail
                )
            except FileNotFoundError:
                return []  # pruned while being read
            except StaleIndex:
                if attempt == 0:
                    await self._rebuild(trace)
        raise Internal(f"trace {trace} does not hold seq {seqs[0]} to {seqs[-1]} in order")

    async def max_seq(self, trace: str) -> int:
        await self._load()
        state = self._traces.get(trace)
        return -1 if state is None else state.layout.next_seq - 1

    async def info(self, trace: str) -> TraceInfo | None:
        await self._load()
        state = self._traces.get(trace)
        return None if state is None else state.info()

    async def traces(self) -> list[TraceInfo]:
        await self._load()
        return [self._traces[name].info() for name in sorted(self._traces)]

    async def put_frame(self, trace: str, frame_hash: str, png: bytes) -> None:
        """The frame is readable when this returns, durable with the next commit: its
        journal records carry the PNG (`_frame_records`), so an entry appended after this
        that names the frame is never durable without it, and the commit writes its file
        while the disk syncs the journal. A frame file of its own, written in a thread and
        fsynced with its folder, cost a thread's hop and two more disk flushes before the
        step's entries."""
        path = str(self._blobs.frame_path(trace, frame_hash))
        if path in self._frames_ahead or path in self._frames_writing:
            return
        try:
            os.utime(path)  # there already: its time refreshed, for the prune by age
        except FileNotFoundError:
            self._frames_ahead[path] = (trace, frame_hash, png)

    async def get_frame(self, trace: str, frame_hash: str) -> bytes | None:
        if is_safe_name(trace) and is_safe_name(frame_hash):
            path = str(self._blobs.frame_path(trace, frame_hash))
            kept = self._frames_ahead.get(path) or self._frames_writing.get(path)
            if kept is not None:
                return kept[2]
        return await self._in(self._read_pool, self._blobs.get_frame, trace, frame_hash)

    async def prune(self, now_ms: int, keep: KeepEntries = keep_none) -> PruneReport:
        await self._load()
        cutoff_ms = now_ms - self.keep_entries_secs * 1000
        async with self._write_lock:
            # Frames no commit has journaled yet are files like the others before a prune.
            ahead, self._frames_ahead = self._frames_ahead, {}
            await self._in(self._write_pool, _write_frames_durably, ahead)
            old, rest = [], []
            for state in self._traces.values():
                # The server's trace is never old as a whole: it holds the runtimes added.
                whole = state.name != SERVER_TRACE
                if whole and state.last_at_ms is not None and state.last_at_ms < cutoff_ms:
                    old.append(state)
                elif state.first_at_ms is not None and state.first_at_ms < cutoff_ms:
                    rest.append(msgspec.structs.replace(state))
            if old or rest:
                # The journal's records say where lines go in files a prune rewrites.
                await self._checkpoint_now()
            report, cut = await self._in(
                self._write_pool, self._prune_files, now_ms, old, rest, keep
            )
            for state in old:
                del self._traces[state.name]
            self._traces.update((state.name, state) for state in cut)
        return report

    async def close(self) -> None:
        await self._stop(checkpoint=True)

    async def _stop(self, checkpoint: bool) -> None:
        """Close; without `checkpoint` (for tests) as a killed server would stop, the
        journal left for the next open to replay."""
        if self._closed:
            return
        self._closed = True
        await self._queue.close()
        await self._in(self._write_pool, self._files.close_all)
        await self._checkpoint_done()
        if checkpoint and self._opened():
            # A last checkpoint: the trace files hold everything, the journal is emptied.
            older = await self._in(self._write_pool, self._journal.retire)
            # Frames put that no commit journaled are made durable too.
            ahead, self._frames_ahead = self._frames_ahead, {}
            await self._in(self._write_pool, _write_frames_durably, ahead)
            dirty = self._take_dirty()
            await self._in(self._checkpoint_pool, self._sync_traces, dirty, older)
        else:
            self._journal.close()  # what it holds stays for the next open
        if self._aio is not None:
            self._aio.close()
        pools = (self._write_pool, self._fsync_pool, self._read_pool, self._checkpoint_pool)
        for pool in pools:
            await asyncio.to_thread(pool.shutdown)
        os.close(self._lock_fd)

    # The writer

    async def _commit(self, batch: list[Append]) -> None:
        async with self._write_lock:
            # Taken under the lock: every frame put before an append began is in its commit
            # or an earlier one.
            frames, self._frames_ahead = self._frames_ahead, {}
            self._frames_writing = frames
            journaled = False
            try:
                journaled = await self._commit_with(batch, frames)
            finally:
                self._frames_writing = {}
                if not journaled:
                    # For the next commit to journal.
                    self._frames_ahead = {**frames, **self._frames_ahead}

    async def _commit_with(
        self, batch: list[Append], frames: dict[str, tuple[str, str, bytes]]
    ) -> bool:
        """A commit's work under the writer's lock, with the frames it journals; whether
        it journaled them."""
        works: dict[str, _Work] = {}
        done: list[tuple[Append, list[Entry]]] = []
        for append in batch:
            work = works.get(append.trace)
            if work is None:
                state = self._traces.get(append.trace) or _Trace(append.trace)
                work = works[append.trace] = _Work(state)
            try:
                seq = work.next_seq + len(work.lines)
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
        # A trace whose every append failed to encode gets no file.
        works = {name: work for name, work in works.items() if work.lines}
        if not works:
            return False
        try:
            if self._broken is not None:
                raise OSError(self._broken)
            sizes = await self._write_on_loop(list(works.values()), frames)
            if sizes is None:
                sizes = await self._in(self._write_pool, self._write, list(works.values()), frames)
        except Exception as exc:
            failure = Unavailable(f"the trace store could not write: {exc}")
            for append, _ in done:
                _fail(append.future, failure)
            return False
        # Before any checkpoint: the one this commit may start syncs them.
        self._dirty_frames.update(frames)
        for work, size in zip(works.values(), sizes, strict=True):
            state = self._traces.setdefault(work.name, _Trace(work.name))
            state.layout.next_seq = work.next_seq + len(work.lines)
            state.size = size
            state.incomplete = False
            state.unindexed.extend(work.offsets)
            del state.unindexed[: len(state.unindexed) - work.unindexed]
            held = self._files.held(work.name)
            if held is not None and len(held.pending) >= INDEX_BATCH:
                # A small write to the page cache; the commit's lines are in already.
                with contextlib.suppress(OSError):
                    _flush_index(held)
                del state.unindexed[: len(state.unindexed) - len(held.pending)]
        self._dirty.update(works)
        for append, entries in done:
            state = self._traces[append.trace]
            if state.first_at_ms is None:
                state.first_at_ms = entries[0].at_ms
            state.last_at_ms = entries[-1].at_ms
            if not append.future.done():
                append.future.set_result(entries)
        if self._journal.full and not self._checkpoint_running():
            await self._start_checkpoint()
        return True

    async def _write_on_loop(
        self, works: list[_Work], frames: dict[str, tuple[str, str, bytes]]
    ) -> list[int] | None:
        """The usual commit (module docstring): its journal records written here and
        fdatasynced by AIO, its lines written to the trace files here too when it touches a
        few, else in the thread; the new sizes. None for any other commit, which goes to
        the thread whole. Under the writer's lock, as `_write`, so the open files and the
        journal are never used twice at once."""
        if self._aio_wanted:
            self._aio_wanted = False
            self._aio = AioSync.open(asyncio.get_running_loop())
        if self._aio is None:
            return None
        for work in works:
            if self._files.held(work.name) is None or work.clear_torn:
                return None  # a file to open or make, a torn mark to clear: the thread's
            if not all(isinstance(line, bytes) for line in work.lines):
                return None  # a line with blobs to write first
        start = self._journal.write(self._journal.pack([*_frame_records(frames), *_records(works)]))
        synced: asyncio.Future[None] | None = None
        try:
            synced = self._aio.submit(self._journal.fd)
        except NotSubmitted:
            pass  # synced in the thread below
        except BaseException:
            self._journal.cut_back(start)
            raise
        # The trace files (and the frames' files) are written while the disk syncs the
        # journal.
        try:
            _write_frames(frames)
            if len(works) <= LOOP_TRACES:
                sizes = self._apply(works, rebuild=False)
            else:
                sizes = await self._in(self._write_pool, self._apply, works)
        except BaseException:
            if synced is not None:
                await _settled(synced)
            await self._in(self._write_pool, self._unjournal, start)
            raise
        try:
            if synced is None:
                await self._in(self._write_pool, self._journal.sync)
            else:
                await synced
        except BaseException:
            if synced is not None:
                await _settled(synced)
            self._unapply(works)
            self._journal.cut_back(start)
            raise
        self.fsyncs += 1
        self.commits += 1
        self.aio_commits += 1
        return sizes

    def _write(self, works: list[_Work], frames: dict[str, tuple[str, str, bytes]]) -> list[int]:
        """Spill what must be spilled, open the files, journal the commit, write its lines
        to the trace files and fdatasync the journal (in the writer's thread); the new
        sizes. On failure nothing of the commit stays, so no seq is half given."""
        for work in works:
            paths = TracePaths.of(self._folder, work.name)
            sink = _RefCollector(self._blobs)
            work.lines = [
                line if isinstance(line, bytes) else encode_entry(line, sink) for line in work.lines
            ]
            if sink.refs:
                # Listed before the line that needs them is durable, so a prune that keeps
                # the trace keeps its blobs.
                new = not os.path.exists(paths.refs)
                listed = "".join(ref + "\n" for ref in sink.refs).encode()
                write_durably(Path(paths.refs), listed, os.O_APPEND)
                if new:
                    fsync_dir(Path(self._folder))
                self.fsyncs += 1 + new
            self._files.get(work.name)  # made here, so that a file that cannot be fails now
        start = self._journal.write(self._journal.pack([*_frame_records(frames), *_records(works)]))
        try:
            _write_frames(frames)
            sizes = self._apply(works)
        except BaseException:
            self._unjournal(start)
            raise
        try:
            self._journal.sync()
        except BaseException:
            self._unapply(works)
            self._journal.cut_back(start)
            raise
        self.fsyncs += 1
        self.commits += 1
        for work in works:
            if work.clear_torn:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(TracePaths.of(self._folder, work.name).torn)
        return sizes

    def _apply(self, works: list[_Work], rebuild: bool = True) -> list[int]:
        """Write a journaled commit's lines to the trace files (not fsynced: the journal
        holds them until a checkpoint) and index them; the new sizes. On failure every file
        is cut back to where it was. An index that does not match is rebuilt here, or (not
        `rebuild`: on the loop) by the next read, which finds it wrong."""
        written: list[tuple[_Work, _Held]] = []
        sizes: list[int] = []
        try:
            for work in works:
                held = self._files.get(work.name)
                written.append((work, held))
                sizes.append(_write_lines(held, work))
        except BaseException:
            self._unapply([work for work, _ in written])
            raise
        for work, size in zip(works, sizes, strict=True):
            held = self._files.get(work.name)
            if _index_offsets(held, work):
                work.unindexed = len(held.pending)
            elif rebuild:
                with contextlib.suppress(OSError):
                    self._rebuild_sync(work.name, size)
        return sizes

    def _unapply(self, works: list[_Work]) -> None:
        """Cut the trace files of a failed commit back to where they were."""
        for work in works:
            held = self._files.held(work.name)
            if held is None:
                continue
            try:
                os.ftruncate(held.jsonl, work.size)
            except OSError:
                held.uncut = True  # the original error is the one to report
            if work.offsets and held.pending[-len(work.offsets) :] == work.offsets:
                del held.pending[-len(work.offsets) :]
            work.offsets, work.unindexed = [], 0

    def _unjournal(self, start: int) -> None:
        """Take back the records of a commit that could not be written to its trace files,
        durably, or the next start would replay what its appends were told had failed."""
        self._journal.cut_back(start)
        try:
            self._journal.sync()
        except OSError as exc:
            self._broken = f"a failed commit could not be taken back from the journal: {exc}"
            raise

    # Checkpoints

    def _checkpoint_running(self) -> bool:
        task = self._checkpointing
        if task is None or not task.done():
            return task is not None
        self._checkpointing = None
        if not task.cancelled() and task.exception() is not None:
            log.error("a checkpoint of the trace store failed; the journal keeps it all")
        return False

    async def _start_checkpoint(self) -> None:
        """Start a new journal segment (under the writer's lock) and make the trace files
        durable behind the appends that go on meanwhile; then the older segments go."""
        older = await self._in(self._write_pool, self._journal.rotate)
        dirty = self._take_dirty()
        self._checkpointing = asyncio.ensure_future(
            self._in(self._checkpoint_pool, self._sync_traces, dirty, older)
        )

    async def _checkpoint_now(self) -> None:
        """A whole checkpoint, waited for (under the writer's lock): afterwards the journal
        holds nothing the trace files lack, and a trace file may be rewritten (a prune)."""
        await self._checkpoint_done()
        if not self._dirty and self._journal.size == 0:
            return
        older = await self._in(self._write_pool, self._journal.rotate)
        dirty = self._take_dirty()
        await self._in(self._checkpoint_pool, self._sync_traces, dirty, older)

    async def _checkpoint_done(self) -> None:
        task, self._checkpointing = self._checkpointing, None
        if task is not None:
            try:
                await task
            except Exception:
                log.exception("a checkpoint of the trace store failed; the journal keeps it all")

    def _take_dirty(self) -> tuple[set[str], set[str]]:
        """What a checkpoint syncs: the traces and the frame files written since the last."""
        dirty = (self._dirty, self._dirty_frames)
        self._dirty, self._dirty_frames = set(), set()
        return dirty

    def _sync_traces(self, dirty: tuple[set[str], set[str]], segments: list[Path]) -> None:
        """fdatasync the files of the traces and the frames `dirty` names and their
        folders, then remove `segments`, whose records are all in those files."""
        traces, frames = dirty
        paths = [TracePaths.of(self._folder, trace).jsonl for trace in sorted(traces)]
        paths += sorted(frames)
        shares = max(1, min(len(paths), 16))
        list(self._fsync_pool.map(_fdatasync_paths, [paths[i::shares] for i in range(shares)]))
        folders = {Path(self._folder), *(Path(frame).parent for frame in frames)}
        if frames:
            folders.add(self._blobs.frames_root)
        for folder in sorted(folders):
            with contextlib.suppress(FileNotFoundError):  # a trace's frames, removed
                fsync_dir(folder)
        self._journal.remove(segments)
        self.fsyncs += len(paths) + len(folders)
        self.checkpoints += 1

    # Reads

    def _read_page(
        self, trace: str, first: int, seqs: list[int], count: int, size: int, tail: _Tail
    ) -> list[Entry]:
        """The lines from `first` on, which hold `seqs`; where the last lines start, those
        the index file may lack, is in `tail`."""
        last = first + len(seqs)
        paths = TracePaths.of(self._folder, trace)
        fd = os.open(paths.jsonl, os.O_RDONLY)
        try:
            start = tail.offset(first)
            end = size if last == count else tail.offset(last)
            if start is None or end is None:
                try:
                    idx_fd = os.open(paths.idx, os.O_RDONLY)
                except FileNotFoundError:
                    raise StaleIndex from None
                try:
                    start = read_offset(idx_fd, first) if start is None else start
                    end = read_offset(idx_fd, last) if end is None else end
                finally:
                    os.close(idx_fd)
            if start is None or end is None or not 0 <= start < end <= size:
                raise StaleIndex
            # One byte before the page must end a line, or the index points mid-line.
            before = max(start - 1, 0)
            chunk = os.pread(fd, end - before, before)
        finally:
            os.close(fd)
        page = chunk[start - before :]
        if (start > 0 and chunk[:1] != b"\n") or not _frames_seqs(page, seqs):
            raise StaleIndex
        try:
            entries = decode_lines(page, self._blobs)
        except CorruptLine as exc:
            # Framed right, so the index is fine: the line is of a shape this holm lacks.
            raise Internal(f"trace {trace} has a line this holm cannot read: {exc}") from exc
        if [entry.seq for entry in entries] != seqs:
            raise StaleIndex
        return entries

    async def _rebuild(self, trace: str) -> None:
        async with self._write_lock:
            state = self._traces.get(trace)
            if state is not None:
                size = state.size
                state.layout = await self._in(self._write_pool, self._rebuild_sync, trace, size)

    def _rebuild_sync(self, trace: str, size: int) -> Layout:
        """Build the trace's index from its file again; its layout, read anew with it."""
        paths = TracePaths.of(self._folder, trace)
        # The rebuilt index is a new file: the writer's open one is the old.
        self._files.forget(trace)
        fd = os.open(paths.jsonl, os.O_RDONLY)
        try:
            return rebuilt_layout(fd, size, paths.idx)
        finally:
            os.close(fd)

    # Opening

    async def _load(self) -> None:
        """Open every trace file once, before the first operation: cut torn lines, check
        the indexes. Done in the writer's thread, so that no commit runs beside it."""
        if self._loaded is not None and self._loaded.done() and not self._loaded.cancelled():
            self._loaded.result()
            return
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
        self._replay(self._journal.recover())
        traces = []
        for path in trace_files(self.state_dir):
            name = path.name.removesuffix(".jsonl")
            if is_safe_name(name):
                traces.append(self._open_trace(name))
        self._journal.begin()
        return traces

    def _opened(self) -> bool:
        loaded = self._loaded
        if loaded is None or not loaded.done() or loaded.cancelled():
            return False
        return loaded.exception() is None

    def _replay(self, records: list[Record]) -> None:
        """Write what the journal holds into the trace files, durably: a commit answered
        after its journal fsync whose lines did not all reach the trace's file before a
        crash. Each record is written where it says, over what may be there already (the
        same bytes, or a torn line), so replaying twice does what replaying once does. A
        trace's file ends where its last record does: nothing after it was answered."""
        replayed = []
        frames: dict[str, bytes] = {}
        for trace, group in by_trace(records):
            if trace.startswith(FRAME_RECORD):
                frames[trace.removeprefix(FRAME_RECORD)] = group[-1].lines
                continue
            if not is_safe_name(trace):
                log.error("journal: a record of %r, which is no trace name, is left out", trace)
                continue
            path = TracePaths.of(self._folder, trace).jsonl
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                size = os.fstat(fd).st_size
                end = None
                for record in group:
                    if record.offset > size:
                        # The file lost what a checkpoint had made durable: nothing to
                        # write these lines after.
                        log.error(
                            "journal: %s ends at byte %d, before its journaled lines at %d;"
                            " they are left out",
                            path,
                            size,
                            record.offset,
                        )
                        break
                    _pwrite_all(fd, record.lines, record.offset)
                    end = size = record.offset + len(record.lines)
                    self.replayed += record.lines.count(b"\n")
                if end is not None:
                    os.ftruncate(fd, end)
                    os.fdatasync(fd)
                    replayed.append(trace)
            finally:
                os.close(fd)
        if replayed:
            fsync_dir(Path(self._folder))
            log.info("journal: replayed into %d trace files", len(replayed))
        self._replay_frames(frames)

    def _replay_frames(self, frames: dict[str, bytes]) -> None:
        """Put back, durably, each frame the journal holds (`<trace>/<hash>`: its PNG) whose
        file a crash lost or left short: its entry may be in a trace."""
        for name, png in frames.items():
            trace, _, digest = name.partition("/")
            if not (is_safe_name(trace) and is_safe_name(digest)):
                log.error("journal: a frame record of %r, which names no frame, is left out", name)
                continue
            if not os.path.exists(TracePaths.of(self._folder, trace).jsonl):
                continue  # the trace is gone, and its frames with it
            path = self._blobs.frame_path(trace, digest)
            if self._blobs.get_frame(trace, digest) != png:
                write_atomic(path, png)
                self.replayed_frames += 1
            else:
                # Whole but maybe only in the page cache (a killed process's).
                _fdatasync_paths([str(path)])
                fsync_dir(path.parent)
        if frames and self._blobs.frames_root.exists():
            fsync_dir(self._blobs.frames_root)

    def _open_trace(self, name: str) -> _Trace:
        paths = TracePaths.of(self._folder, name)
        fd = os.open(paths.jsonl, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            tail = find_tail(fd, size)
            incomplete = os.path.exists(paths.torn)
            if tail.end < size:
                torn = os.pread(fd, size - tail.end, tail.end)
                earlier = Path(paths.torn).read_bytes() if incomplete else b""
                write_atomic(Path(paths.torn), earlier + torn)
                os.ftruncate(fd, tail.end)
                os.fsync(fd)
                incomplete = True
            count = check_index(fd, tail, paths.idx)
            if tail.last is None:
                return _Trace(name, incomplete=incomplete)
            try:
                layout = read_layout(fd, tail.end, count, paths.idx)
            except StaleIndex:
                layout = rebuilt_layout(fd, tail.end, paths.idx)
            first = read_envelope(line_at(fd, 0, tail.end))
            return _Trace(
                name,
                layout=layout,
                size=tail.end,
                first_at_ms=None if first is None else first.at_ms,
                last_at_ms=tail.last.at_ms,
                incomplete=incomplete,
            )
        finally:
            os.close(fd)

    # Retention

    def _prune_files(
        self, now_ms: int, old: list[_Trace], rest: list[_Trace], keep: KeepEntries
    ) -> tuple[PruneReport, list[_Trace]]:
        """Remove old frames, the `old` traces whole, the old prefix of the `rest` but
        for what `keep` names, and then the blobs no trace lists; the report, and the
        traces of `rest` that were cut, as they are now."""
        report = PruneReport()
        cutoff_ms = now_ms - self.keep_entries_secs * 1000
        report.frames = self._blobs.remove_frames_older_than(now_ms - self.keep_frames_secs * 1000)
        cut = []
        for state in rest:
            dropped = self._cut_front(state, cutoff_ms, keep)
            if dropped:
                report.entries += dropped
                cut.append(state)
        for state in old:
            self._files.forget(state.name)
            for path in TracePaths.of(self._folder, state.name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            report.frames += self._blobs.remove_frames_of(state.name)
            report.entries += state.layout.lines
            report.boxes += 1
        if old:
            fsync_dir(Path(self._folder))
        kept_refs: set[str] = set()
        for refs in Path(self._folder).glob("*" + REFS):
            kept_refs.update(refs.read_text().split())
        self._blobs.remove_older_than(now_ms - self.keep_entries_secs * 1000, kept_refs)
        return report, cut

    def _cut_front(self, state: _Trace, cutoff_ms: int, keep: KeepEntries) -> int:
        """Drop the trace's old prefix but for the seqs `keep` names, by writing what is
        left to a new file and renaming it over the old; `state` is updated to match. How
        many entries went."""
        paths = TracePaths.of(self._folder, state.name)
        fd = os.open(paths.jsonl, os.O_RDONLY)
        try:
            old, cut = 0, 0
            for line in read_lines(fd, state.size):
                envelope = read_envelope(line)
                # Never the last entry: a trace kept whole-old (the server's) keeps it.
                last = old == state.layout.lines - 1
                if envelope is None or envelope.at_ms >= cutoff_ms or last:
                    break
                old += 1
                cut += len(line)
            entries = (decode_line(line, self._blobs) for line in read_lines(fd, cut))
            named = keep(state.name, entries)
            kept = [line for line in read_lines(fd, cut) if seq_of(line) in named]
            if len(kept) == old:
                return 0
            size = self._write_pruned(fd, paths, kept, cut, state.size)
        finally:
            os.close(fd)
        self._files.forget(state.name)
        state.unindexed = []
        # No index until the new file is in place: a crash between finds none, and builds
        # one from whichever file it finds.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(paths.idx)
        fsync_dir(Path(self._folder))
        os.rename(paths.pruned, paths.jsonl)
        fsync_dir(Path(self._folder))
        fd = os.open(paths.jsonl, os.O_RDONLY)
        try:
            state.layout = rebuilt_layout(fd, size, paths.idx)
            state.size = size
            first = read_envelope(line_at(fd, 0, size))
            state.first_at_ms = None if first is None else first.at_ms
            refs = {ref for line in read_lines(fd, size) for ref in blob_refs(line)}
        finally:
            os.close(fd)
        if refs or os.path.exists(paths.refs):
            # Rewritten after the file, so that it never misses a blob a line on disk names.
            write_atomic(Path(paths.refs), "".join(ref + "\n" for ref in sorted(refs)).encode())
        return old - len(kept)

    def _write_pruned(
        self, fd: int, paths: TracePaths, kept: list[bytes], cut: int, size: int
    ) -> int:
        """Write the kept lines and then the file from `cut` on to the trace's `.pruned`
        file, durably; its size."""
        out = os.open(paths.pruned, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            written = b"".join(kept)
            write_all(out, written)
            pos = cut
            while pos < size:
                chunk = os.pread(fd, min(_COPY_CHUNK, size - pos), pos)
                write_all(out, chunk)
                pos += len(chunk)
            os.fsync(out)
        finally:
            os.close(out)
        return len(written) + size - cut

    async def _in(self, pool: ThreadPoolExecutor, func: Callable[..., _T], *args: Any) -> _T:
        return await asyncio.get_running_loop().run_in_executor(pool, func, *args)


class _Held:
    """A trace's open files, and what the writer knows of them without asking."""

    __slots__ = ("idx", "idx_size", "jsonl", "pending", "uncut")

    def __init__(self, jsonl: int, idx: int, idx_size: int) -> None:
        self.jsonl = jsonl
        self.idx = idx
        # The index's size as the writer left it (it alone writes there while it is open),
        # and the offsets it holds back to write in one go (INDEX_BATCH).
        self.idx_size = idx_size
        self.pending: list[int] = []
        # A failed commit could not cut the JSONL back: the next write checks its end.
        self.uncut = False


class _OpenFiles:
    """The files the writer keeps open between commits: each trace's JSONL and index,
    the least recently used closed first. Used only under the writer's lock: in its thread,
    or on the loop for the usual commit (`held` only, which opens nothing)."""

    def __init__(self, folder: str, most: int = OPEN_TRACES) -> None:
        self.folder = folder
        self.most = most
        self._open: OrderedDict[str, _Held] = OrderedDict()

    def held(self, trace: str) -> _Held | None:
        """The trace's files if they are open, else None."""
        held = self._open.get(trace)
        if held is not None:
            self._open.move_to_end(trace)
        return held

    def get(self, trace: str) -> _Held:
        """The trace's files, opened (and made) if they are not."""
        held = self.held(trace)
        if held is not None:
            return held
        paths = TracePaths.of(self.folder, trace)
        jsonl = os.open(paths.jsonl, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            idx = os.open(paths.idx, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            held = self._open[trace] = _Held(jsonl, idx, os.fstat(idx).st_size)
        except BaseException:
            os.close(jsonl)
            raise
        while len(self._open) > self.most:
            self.forget(next(iter(self._open)))
        return held

    def forget(self, trace: str) -> None:
        held = self._open.pop(trace, None)
        if held is not None:
            with contextlib.suppress(OSError):
                _flush_index(held)  # else the next open finds the index short, and extends it
            os.close(held.jsonl)
            os.close(held.idx)

    def close_all(self) -> None:
        while self._open:
            self.forget(next(iter(self._open)))


def _lock_state_dir(state_dir: Path) -> int:
    fd = os.open(state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise Unavailable(f"{state_dir} is in use by another holmd") from None
    return fd


def _write_lines(held: _Held, work: _Work) -> int:
    """Write a commit's encoded lines after the trace's last (not fsynced); the new size."""
    data = work.data()
    size = work.size + len(data)
    _pwrite_all(held.jsonl, data, work.size)
    if held.uncut:
        if os.fstat(held.jsonl).st_size > size:
            os.ftruncate(held.jsonl, size)
        held.uncut = False
    return size


def _index_offsets(held: _Held, work: _Work) -> bool:
    """Append where each of a commit's lines begins to the trace's index, held back in
    `held.pending` until `_flush_index` (a read takes them from `_Trace.unindexed`); False
    (and nothing appended) when the index does not end where the file's lines did, and
    must be rebuilt."""
    if held.idx_size + len(held.pending) * OFFSET.size != work.count * OFFSET.size:
        return False
    offsets = []
    offset = work.size
    for line in work.lines:
        assert isinstance(line, bytes)
        offsets.append(offset)
        offset += len(line)
    work.offsets = offsets
    held.pending.extend(offsets)
    return True


def _flush_index(held: _Held) -> None:
    """Write the offsets held back to the index file (not fsynced: it is rebuildable)."""
    if not held.pending or held.idx_size < 0:
        return
    packed = offsets_bytes(held.pending)
    at, held.idx_size = held.idx_size, -1  # unknown until the write is whole
    os.pwrite(held.idx, packed, at)
    held.idx_size = at + len(packed)
    held.pending = []


class _Tail(NamedTuple):
    """Where a trace's last lines start, from line `first` on (a read's copy of
    `_Trace.unindexed`)."""

    first: int
    offsets: tuple[int, ...]

    def offset(self, line: int) -> int | None:
        index = line - self.first
        return self.offsets[index] if 0 <= index < len(self.offsets) else None


def _pwrite_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view = view[written:]
        offset += written


def _frames_seqs(page: bytes, seqs: list[int]) -> bool:
    """Whether `page` is the whole lines of `seqs`, by its framing."""
    if page.count(b"\n") != len(seqs) or not page.endswith(b"\n"):
        return False
    head = read_envelope(page[: page.index(b"\n")])
    tail = read_envelope(page[page.rfind(b"\n", 0, len(page) - 1) + 1 :])
    return head is not None and head.seq == seqs[0] and tail is not None and tail.seq == seqs[-1]


def _fdatasync_paths(paths: list[str]) -> None:
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # removed by a prune, which made its own checkpoint first
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)


def _write_frames(frames: dict[str, tuple[str, str, bytes]]) -> None:
    """Put each frame's file in place, whole or not at all, but not synced: the journal
    holds them until a checkpoint syncs them (`LocalStore.put_frame`). A few writes to the
    page cache, beside the commit's own."""
    for path, (_, _, png) in frames.items():
        folder, name = os.path.split(path)
        tmp = os.path.join(folder, f".{name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        try:
            fd = os.open(tmp, flags, 0o644)
        except FileNotFoundError:
            os.makedirs(folder, exist_ok=True)
            fd = os.open(tmp, flags, 0o644)
        try:
            write_all(fd, png)
        finally:
            os.close(fd)
        os.rename(tmp, path)


def _write_frames_durably(frames: dict[str, tuple[str, str, bytes]]) -> None:
    """Frames no commit journaled, put in their files durably (a prune, a close)."""
    for path, (_, _, png) in frames.items():
        write_atomic(Path(path), png)


def _frame_records(frames: dict[str, tuple[str, str, bytes]]) -> list[tuple[str, int, bytes]]:
    """A commit's journal records of the frames put since the last: named
    `frame/<trace>/<hash>` (no trace's name has a slash), the PNG as their lines."""
    return [(f"{FRAME_RECORD}{trace}/{digest}", 0, png) for trace, digest, png in frames.values()]


def _records(works: list[_Work]) -> Iterator[tuple[str, int, bytes]]:
    """A commit's journal records: each trace's lines and where they go."""
    for work in works:
        yield work.name, work.size, work.data()


async def _settled(future: asyncio.Future[Any]) -> None:
    """Wait for `future` to end, however it ends (the caller has an error to report)."""
    await asyncio.wait([future])


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


# `TORN`, `TraceRead`, `read_trace_file` and `trace_files` are also reached through here.
__all__ = ["LOCK_FILE", "TORN", "LocalStore", "TraceRead", "read_trace_file", "trace_files"]
