"""The PostgreSQL store (`HOLM_STORAGE_BACKEND=postgres`, `HOLM_DATABASE_URL`): entries in
tables (pg_schema.py), blobs and frames in an object store (objects.py: files in the state
dir, or an S3 bucket). The driver is asyncpg (docs/storage.md says why).

An append returns once its transaction has committed. Appends are queued; one writer
takes everything queued and commits it as one transaction, one round trip (the function
`holm_append`), so concurrent appends share their commits (group commit), as the local
store's share fsyncs. The writer numbers the lines from the next seq it knows of each
trace; when another writer (another holmd) appended meanwhile, the transaction refuses
(`HL001`) and the writer numbers again with the feed's lock held, so the second try
succeeds. `(trace, seq)` is the entries' primary key: two entries never share a seq.

Every append takes the `holm_feed` row first: appends commit one at a time, and each
gets `pos` numbers (one per entry, gap-free, across all traces) in commit order, so a
reader of `changes(after)` never sees a pos while a smaller one is still to commit.

A value that spills (codec.py) is written to the object store before the transaction that
names it commits. A frame's bytes go to the object store and its last-written time to
`holm_frames`; a read of a frame asks the object store only, so frames read while
PostgreSQL is down, and so do the last lines this store wrote of each trace (recent.py).
Errors of the driver, the network or the server are `Unavailable` (retryable) at this
boundary; the pool and the writer's connection reconnect on next use.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar

import asyncpg
import msgspec
from asyncpg.pool import PoolConnectionProxy

from holm.errors import HolmError, Internal, Unavailable
from holm.events.blobs import check_name
from holm.events.codec import blob_refs, decode_lines, encode_entry, needs_spill
from holm.events.group_commit import Append, AppendQueue
from holm.events.objects import ObjectStore, blob_key, frame_key, frame_key_or_none
from holm.events.pg_schema import OBJECTS_LOCK, STALE_SEQ, migrate
from holm.events.pruning import KeepEntries, Layout, keep_none
from holm.events.recent import RecentLines
from holm.events.store import TraceInfo
from holm.wire.api import PruneReport
from holm.wire.entries import PAGE_MAX, SERVER_TRACE, Entry

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_BLOB_MARK = '"__blob"'
_APPEND = "SELECT holm_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
_TRACE_COLUMNS = "trace, next_seq, first_seq, head, first_at_ms, last_at_ms"
# A connection of its own or one lent by the pool.
_Conn = asyncpg.Connection | PoolConnectionProxy


class StaleSeq(Exception):
    """Another writer appended to a trace since this one numbered its lines."""


class Change(msgspec.Struct, frozen=True):
    """One entry in commit order: its place in the feed of every trace (`pos`)."""

    pos: int
    trace: str
    entry: Entry


class _Numbered:
    """A batch numbered from known next seqs, as holm_append takes it."""

    def __init__(self) -> None:
        self.done: list[tuple[Append, list[Entry]]] = []
        # trace -> [start, count, first_at_ms, last_at_ms]
        self.traces: dict[str, list[int]] = {}
        self.e_trace: list[str] = []
        self.e_seq: list[int] = []
        self.e_at: list[int] = []
        self.e_line: list[str] = []
        self.e_refs: list[str | None] = []
        # trace -> its (seq, at_ms, line), for RecentLines once committed.
        self.lines: dict[str, list[tuple[int, int, str]]] = {}
        self.spills: dict[str, bytes] = {}
        # Appends that could not be encoded; and whether a line must spill (see _number).
        self.failed: list[tuple[Append, Exception]] = []
        self.needs_spill = False

    def args(self) -> list[Any]:
        names = sorted(self.traces)
        return [
            names,
            [self.traces[name][0] for name in names],
            [self.traces[name][1] for name in names],
            [self.traces[name][2] for name in names],
            [self.traces[name][3] for name in names],
            self.e_trace,
            self.e_seq,
            self.e_at,
            self.e_line,
            self.e_refs,
            sorted(self.spills),
            _now_ms(),
        ]


class _Spills:
    """A blob sink that keeps what it is given, to be written before the commit."""

    def __init__(self, into: dict[str, bytes]) -> None:
        self.into = into

    def put(self, data: bytes) -> str:
        ref = "sha256:" + hashlib.sha256(data).hexdigest()
        self.into[ref] = data
        return ref


class _Fetched:
    """Blobs fetched for one read, as the codec's blob source."""

    def __init__(self, blobs: dict[str, bytes | None]) -> None:
        self.blobs = blobs

    def get(self, ref: str) -> bytes | None:
        return self.blobs.get(ref)


async def _keep_session(conn: asyncpg.Connection) -> None:
    """What the pool does to a connection given back, in place of asyncpg's reset (one more
    round trip after every query: `SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *;
    RESET ALL`): nothing, for no pooled connection keeps session state. Their advisory
    locks are a transaction's (`pg_advisory_xact_lock…`, let go by its end); the migration's
    session lock is taken on a connection of its own, outside the pool, and let go
    explicitly (pg_schema.py); nothing listens; a cursor lives in a transaction; and the one
    setting, `search_path`, is the connection's own from its start (`server_settings`). A
    transaction left open is still rolled back: asyncpg does that before calling this."""


class PostgresStore:
    """The `postgres` backend. See the module docstring."""

    # The pool's reset of a connection given back (None: asyncpg's own, for
    # bench/store_postgres.py to compare).
    pool_reset: Callable[[asyncpg.Connection], Awaitable[None]] | None = staticmethod(_keep_session)

    def __init__(
        self,
        url: str,
        objects: ObjectStore,
        *,
        keep_frames_secs: int = 2 * 3600,
        keep_entries_secs: int = 7 * 24 * 3600,
        schema: str | None = None,
        pool_size: int = 8,
        command_timeout: float = 15.0,
        group_commit: bool = True,
    ) -> None:
        self.keep_frames_secs = keep_frames_secs
        self.keep_entries_secs = keep_entries_secs
        self.objects = objects
        self._url = url
        self._schema = schema
        self._pool_size = pool_size
        self._timeout = command_timeout
        self._pool: asyncpg.Pool | None = None
        self._opening: asyncio.Task[asyncpg.Pool] | None = None
        self._conn: asyncpg.Connection | None = None
        # The next seq of each trace as this store last wrote or read it: a guess that the
        # database checks (another holmd may have appended since).
        self._next: dict[str, int] = {}
        self._recent = RecentLines()
        self._queue = AppendQueue(self._commit, group_commit=group_commit, name="holm-pg-writer")
        self._closed = False
        # For bench/store_postgres.py and the tests.
        self.commits = 0
        self.renumbered = 0

    # TraceStore

    async def append(self, trace: str, entries: Sequence[Entry]) -> list[Entry]:
        if trace not in self._next:  # a name written once was checked then
            check_name("trace", trace)
        if self._closed:
            raise Unavailable("the trace store is closed")
        if not entries:
            return []
        return await self._queue.put(trace, entries)

    async def read(
        self, trace: str, after: int | None = None, limit: int = PAGE_MAX
    ) -> list[Entry]:
        if limit <= 0:
            return []
        try:
            rows = await self._fetch(
                "SELECT line FROM holm_entries WHERE trace = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                trace,
                -1 if after is None else after,
                limit,
            )
        except Unavailable:
            # What this holmd wrote last is served while the database is away.
            kept = self._recent.page(trace, after, limit)
            if kept is None:
                raise
            return await self._decode(kept)
        return await self._decode([row["line"] for row in rows])

    async def max_seq(self, trace: str) -> int:
        try:
            rows = await self._fetch("SELECT next_seq FROM holm_traces WHERE trace = $1", trace)
        except Unavailable:
            kept = self._recent.max_seq(trace)
            if kept is None:
                raise
            return kept
        return int(rows[0]["next_seq"]) - 1 if rows else -1

    async def info(self, trace: str) -> TraceInfo | None:
        query = f"SELECT {_TRACE_COLUMNS} FROM holm_traces WHERE trace = $1"
        try:
            rows = await self._fetch(query, trace)
        except Unavailable:
            kept = self._recent.info(trace)
            if kept is None:
                raise
            return kept
        return _info(rows[0]) if rows else None

    async def traces(self) -> list[TraceInfo]:
        rows = await self._fetch(f"SELECT {_TRACE_COLUMNS} FROM holm_traces")
        return sorted((_info(row) for row in rows), key=lambda info: info.trace)

    async def put_frame(self, trace: str, frame_hash: str, png: bytes) -> None:
        key = frame_key(trace, frame_hash)
        pool = await self._ready()
        with _mapped("write a frame"):
            refreshed = await pool.execute(
                "UPDATE holm_frames SET at_ms = $3 WHERE trace = $1 AND hash = $2",
                trace,
                frame_hash,
                _now_ms(),
            )
            if refreshed == "UPDATE 1":
                return
            async with pool.acquire() as conn, conn.transaction():
                # Shared with other writers, never with a prune that removes objects.
                await conn.execute("SELECT pg_advisory_xact_lock_shared($1)", OBJECTS_LOCK)
                await self.objects.put(key, png)
                await conn.execute(
                    "INSERT INTO holm_frames (trace, hash, at_ms) VALUES ($1, $2, $3)"
                    " ON CONFLICT (trace, hash) DO UPDATE SET at_ms = EXCLUDED.at_ms",
                    trace,
                    frame_hash,
                    _now_ms(),
                )

    async def get_frame(self, trace: str, frame_hash: str) -> bytes | None:
        key = frame_key_or_none(trace, frame_hash)
        return None if key is None else await self.objects.get(key)

    async def prune(self, now_ms: int, keep: KeepEntries = keep_none) -> PruneReport:
        pool = await self._ready()
        with _mapped("prune"):
            async with pool.acquire() as conn, conn.transaction():
                report, gone = await self._prune(conn, now_ms, keep)
        self._recent.clear()
        for trace in gone:
            self._next.pop(trace, None)
        return report

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._queue.close()
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._conn.close(), 5)
        if self._opening is not None and not self._opening.done():
            self._opening.cancel()
            with contextlib.suppress(BaseException):
                await self._opening
        if self._pool is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._pool.close(), 5)
        await self.objects.close()

    # Beyond TraceStore

    async def changes(self, after: int = -1, limit: int = PAGE_MAX) -> list[Change]:
        """Entries of every trace with pos > `after`, in commit order: a reader that pages
        with the last pos it got misses none (the module docstring says why)."""
        rows = await self._fetch(
            "SELECT pos, trace, line FROM holm_entries WHERE pos > $1 ORDER BY pos LIMIT $2",
            after,
            limit,
        )
        entries = await self._decode([row["line"] for row in rows])
        return [
            Change(pos=row["pos"], trace=row["trace"], entry=entry)
            for row, entry in zip(rows, entries, strict=True)
        ]

    # Each trace's data key (holm/events/trace_keys.py)

    async def get_trace_key(self, trace: str) -> bytes | None:
        pool = await self._ready()
        with _mapped("read a trace's key"):
            found = await pool.fetchval(
                "SELECT sealed FROM holm_trace_keys WHERE trace = $1", trace
            )
        return None if found is None else bytes(found)

    async def put_trace_key(self, trace: str, sealed: bytes) -> None:
        pool = await self._ready()
        with _mapped("keep a trace's key"):
            await pool.execute(
                "INSERT INTO holm_trace_keys VALUES ($1, $2) ON CONFLICT (trace) DO NOTHING",
                trace,
                sealed,
            )

    async def drop_trace_key(self, trace: str) -> bool:
        pool = await self._ready()
        with _mapped("shred a trace's key"):
            status = await pool.execute("DELETE FROM holm_trace_keys WHERE trace = $1", trace)
        return bool(status.endswith(" 1"))

    # For the replicas' tables (leases.py)

    async def query(self, doing: str, sql: str, *args: Any) -> list[asyncpg.Record]:
        """Rows of one statement on the pool, its errors mapped as every read's."""
        pool = await self._ready()
        with _mapped(doing):
            return await pool.fetch(sql, *args)

    # Opening

    async def _ready(self) -> asyncpg.Pool:
        """The pool, made (and the schema migrated) on first use; a failure is retried by
        the next call, so a store opened before its server is up works once it is."""
        if self._pool is not None:
            return self._pool
        if self._closed:
            raise Unavailable("the trace store is closed")
        if self._opening is None or (self._opening.done() and self._opening.exception()):
            self._opening = asyncio.ensure_future(self._open())
        self._pool = await asyncio.shield(self._opening)
        return self._pool

    async def _open(self) -> asyncpg.Pool:
        with _mapped("open the database"):
            first = await asyncpg.connect(self._url, timeout=self._timeout)
            try:
                version = await migrate(first, self._schema)
            finally:
                await first.close()
            log.info("postgres store: schema version %d", version)
            pool: asyncpg.Pool = await asyncpg.create_pool(
                self._url,
                min_size=0,
                max_size=self._pool_size,
                command_timeout=self._timeout,
                server_settings=self._settings(),
                reset=self.pool_reset,
            )
            return pool

    def _settings(self) -> dict[str, str]:
        return {} if self._schema is None else {"search_path": f'"{self._schema}"'}

    async def _writer_conn(self) -> asyncpg.Connection:
        if self._conn is None or self._conn.is_closed():
            await self._ready()
            self._conn = await asyncpg.connect(
                self._url,
                timeout=self._timeout,
                command_timeout=self._timeout,
                server_settings=self._settings(),
            )
        return self._conn

    async def _fetch(self, query: str, *args: Any) -> list[asyncpg.Record]:
        pool = await self._ready()
        with _mapped("read"):
            return await pool.fetch(query, *args)

    # The writer

    async def _commit(self, batch: list[Append]) -> None:
        try:
            numbered = await self._commit_batch(batch)
        except BaseException:
            # Whatever broke, the connection may be mid-exchange: the next commit makes a
            # new one rather than guess.
            if self._conn is not None:
                self._conn.terminate()
                self._conn = None
            raise
        for name, (start, count, _, _) in numbered.traces.items():
            self._next[name] = start + count
        for trace, lines in numbered.lines.items():
            self._recent.add(trace, lines)
        for append, entries in numbered.done:
            if not append.future.done():
                append.future.set_result(entries)

    async def _commit_batch(self, batch: list[Append]) -> _Numbered:
        with _mapped("write"):
            conn = await self._writer_conn()
            unknown = sorted({a.trace for a in batch if a.trace not in self._next})
            if unknown:
                await self._load_next(conn, unknown)
            numbered = _number(batch, self._next, spill=False)
            if numbered.needs_spill:
                # The careful path: encoded in a thread, blobs written before the commit.
                numbered = await self._commit_locked(conn, batch, spills=True)
            else:
                _fail_all(numbered.failed)
                if not numbered.done:
                    return numbered
                try:
                    await _append(conn, numbered)
                except StaleSeq:
                    numbered = await self._commit_locked(conn, batch, spills=False)
            self.commits += 1
            return numbered

    async def _commit_locked(
        self, conn: asyncpg.Connection, batch: list[Append], spills: bool
    ) -> _Numbered:
        """Number (again) with the feed's lock held, so that no writer comes between, write
        the blobs, and commit."""
        self.renumbered += not spills
        async with conn.transaction():
            if spills:
                # Shared with other writers, never with a prune that removes objects.
                await conn.execute("SELECT pg_advisory_xact_lock_shared($1)", OBJECTS_LOCK)
            await conn.execute("SELECT 1 FROM holm_feed WHERE id = 1 FOR UPDATE")
            await self._load_next(conn, sorted({a.trace for a in batch}))
            live = [append for append in batch if not append.future.done()]
            next_seqs = dict(self._next)
            if spills:
                # Big values: their JSON and its sha256 take long enough to keep off the loop.
                numbered = await asyncio.to_thread(_number, live, next_seqs, True)
            else:
                numbered = _number(live, next_seqs, True)
            _fail_all(numbered.failed)
            if numbered.done:
                await asyncio.gather(
                    *(self.objects.put(blob_key(r), data) for r, data in numbered.spills.items())
                )
                await _append(conn, numbered)
        return numbered

    async def _load_next(self, conn: asyncpg.Connection, traces: list[str]) -> None:
        rows = await conn.fetch(
            "SELECT trace, next_seq FROM holm_traces WHERE trace = ANY($1::text[])", traces
        )
        known = {row["trace"]: int(row["next_seq"]) for row in rows}
        for trace in traces:
            self._next[trace] = known.get(trace, 0)

    # Reads

    async def _decode(self, lines: list[str]) -> list[Entry]:
        if not lines:
            return []
        chunk = ("\n".join(lines) + "\n").encode()
        if _BLOB_MARK.encode() not in chunk:
            return decode_lines(chunk)
        refs = {ref for line in lines if _BLOB_MARK in line for ref in blob_refs(line.encode())}
        blobs = await _gather_dict(refs, lambda ref: self.objects.get(blob_key(ref)))
        # Values over 64 KB each: decoded off the loop.
        return await asyncio.to_thread(decode_lines, chunk, _Fetched(blobs))

    # Retention

    async def _prune(
        self, conn: _Conn, now_ms: int, keep: KeepEntries
    ) -> tuple[PruneReport, list[str]]:
        """One transaction: the objects' lock and the feed's (appends wait), old frames,
        old traces whole, the old prefix of the others but for what `keep` names, blobs
        no entry names; then their objects. The report, and the traces gone."""
        report = PruneReport()
        cutoff = now_ms - self.keep_entries_secs * 1000
        await conn.execute("SELECT pg_advisory_xact_lock($1)", OBJECTS_LOCK)
        await conn.execute("SELECT 1 FROM holm_feed WHERE id = 1 FOR UPDATE")
        frames = await conn.fetch(
            "DELETE FROM holm_frames WHERE at_ms < $1 RETURNING trace, hash",
            now_ms - self.keep_frames_secs * 1000,
        )
        # The server's trace is never old as a whole: it holds the runtimes added.
        old = await conn.fetch(
            f"DELETE FROM holm_traces WHERE last_at_ms < $1 AND trace <> $2"
            f" RETURNING {_TRACE_COLUMNS}",
            cutoff,
            SERVER_TRACE,
        )
        gone = [row["trace"] for row in old]
        if gone:
            await conn.execute("DELETE FROM holm_entries WHERE trace = ANY($1::text[])", gone)
            frames += await conn.fetch(
                "DELETE FROM holm_frames WHERE trace = ANY($1::text[]) RETURNING trace, hash",
                gone,
            )
            report.boxes = len(gone)
            report.entries = sum(_layout(row).lines for row in old)
        report.frames = len(frames)
        rest = await conn.fetch(
            f"SELECT {_TRACE_COLUMNS} FROM holm_traces WHERE first_at_ms < $1", cutoff
        )
        for row in rest:
            report.entries += await self._cut_front(conn, row, cutoff, keep)
        named: set[str] = set()
        for refs in await conn.fetch("SELECT refs FROM holm_entries WHERE refs IS NOT NULL"):
            named.update(refs["refs"].split())
        old_blobs = [
            row["ref"]
            for row in await conn.fetch("SELECT ref FROM holm_blobs WHERE at_ms < $1", cutoff)
            if row["ref"] not in named
        ]
        await conn.execute("DELETE FROM holm_blobs WHERE ref = ANY($1::text[])", old_blobs)
        await self.objects.delete(
            [frame_key(row["trace"], row["hash"]) for row in frames]
            + [blob_key(ref) for ref in old_blobs]
        )
        return report, gone

    async def _cut_front(
        self, conn: _Conn, row: asyncpg.Record, cutoff: int, keep: KeepEntries
    ) -> int:
        """Drop one trace's old prefix but for the seqs `keep` names; how many went."""
        trace = row["trace"]
        stop = await conn.fetchval(
            "SELECT min(seq) FROM holm_entries WHERE trace = $1 AND at_ms >= $2", trace, cutoff
        )
        if stop is None:
            # Wholly old (the server's trace): never its last entry.
            stop = await conn.fetchval("SELECT max(seq) FROM holm_entries WHERE trace = $1", trace)
            if stop is None:
                return 0
        prefix = await conn.fetch(
            "SELECT seq, line FROM holm_entries WHERE trace = $1 AND seq < $2 ORDER BY seq",
            trace,
            stop,
        )
        entries = await self._decode([item["line"] for item in prefix])
        named = keep(trace, iter(entries))
        kept = [item["seq"] for item in prefix if item["seq"] in named]
        if len(kept) == len(prefix):
            return 0
        await conn.execute(
            "DELETE FROM holm_entries"
            " WHERE trace = $1 AND seq < $2 AND NOT seq = ANY($3::bigint[])",
            trace,
            stop,
            kept,
        )
        layout = _layout(row).pruned(len(prefix), kept)
        await conn.execute(
            "UPDATE holm_traces SET head = $2, first_seq = $3, first_at_ms ="
            " (SELECT at_ms FROM holm_entries WHERE trace = $1 ORDER BY seq LIMIT 1)"
            " WHERE trace = $1",
            trace,
            layout.head,
            layout.first_seq,
        )
        return len(prefix) - len(kept)


def _number(batch: list[Append], next_seqs: dict[str, int], spill: bool) -> _Numbered:
    """Give the batch's entries their seqs, from `next_seqs`, and their lines. An append
    that cannot be encoded fails alone (in `failed`, for the loop to answer). Without
    `spill`, a line that must spill stops the numbering (`needs_spill`): it is done again
    with blobs. Touches no future, so that it can run in a thread."""
    numbered = _Numbered()
    sink = _Spills(numbered.spills)
    for append in batch:
        if append.future.done():
            continue  # failed to encode in an earlier try
        known = numbered.traces.get(append.trace)
        start = next_seqs[append.trace] if known is None else known[0] + known[1]
        try:
            entries = [
                msgspec.structs.replace(entry, seq=start + i)
                for i, entry in enumerate(append.entries)
            ]
            lines = []
            for entry in entries:
                line = encode_entry(entry)
                if needs_spill(line):
                    if not spill:
                        numbered.needs_spill = True
                        return numbered
                    line = encode_entry(entry, sink)
                lines.append(line)
        except Exception as exc:
            numbered.failed.append((append, exc))
            continue
        if known is None:
            numbered.traces[append.trace] = [start, 0, entries[0].at_ms, 0]
            known = numbered.traces[append.trace]
        known[1] += len(entries)
        known[3] = entries[-1].at_ms
        kept = numbered.lines.setdefault(append.trace, [])
        for entry, line in zip(entries, lines, strict=True):
            text = line[:-1].decode()
            numbered.e_trace.append(append.trace)
            numbered.e_seq.append(entry.seq)
            numbered.e_at.append(entry.at_ms)
            numbered.e_line.append(text)
            refs = blob_refs(line) if _BLOB_MARK in text else []
            numbered.e_refs.append(" ".join(refs) if refs else None)
            kept.append((entry.seq, entry.at_ms, text))
        numbered.done.append((append, entries))
    return numbered


def _fail_all(failed: list[tuple[Append, Exception]]) -> None:
    for append, exc in failed:
        _fail(append.future, exc)


async def _append(conn: asyncpg.Connection, numbered: _Numbered) -> None:
    try:
        await conn.fetchval(_APPEND, *numbered.args())
    except asyncpg.PostgresError as exc:
        if exc.sqlstate == STALE_SEQ:
            raise StaleSeq from exc
        raise


def _layout(row: asyncpg.Record) -> Layout:
    return Layout(list(row["head"]), row["first_seq"], row["next_seq"])


def _info(row: asyncpg.Record) -> TraceInfo:
    layout = _layout(row)
    return TraceInfo(
        trace=row["trace"],
        entries=layout.lines,
        max_seq=layout.next_seq - 1,
        first_seq=layout.first_seq,
        first_at_ms=row["first_at_ms"],
        last_at_ms=row["last_at_ms"],
    )


async def _gather_dict(keys: set[str], get: Callable[[str], Awaitable[_T]]) -> dict[str, _T]:
    ordered = sorted(keys)
    values = await asyncio.gather(*(get(key) for key in ordered))
    return dict(zip(ordered, values, strict=True))


@contextlib.contextmanager
def _mapped(doing: str) -> Iterator[None]:
    """The driver's, the network's and the server's errors as holm's, at the boundary."""
    try:
        yield
    except (HolmError, StaleSeq):
        raise
    except asyncpg.UniqueViolationError as exc:
        # holm_append's checks make this unreachable; if it is reached, say what it is.
        raise Internal(f"two writers gave one seq to an entry; nothing was written: {exc}") from exc
    except (
        asyncpg.PostgresConnectionError,
        asyncpg.CannotConnectNowError,
        asyncpg.AdminShutdownError,
        asyncpg.CrashShutdownError,
        asyncpg.TooManyConnectionsError,
        asyncpg.InterfaceError,
        # A connection the server ended while it was idle is left mid-exchange: the next
        # use says so. It is dropped (`_commit`, the pool), so a retry gets a new one.
        asyncpg.InternalClientError,
        asyncpg.SerializationError,
        asyncpg.DeadlockDetectedError,
        OSError,  # refused, reset, and timed out (TimeoutError is one)
    ) as exc:
        raise Unavailable(f"the database could not {doing}: {_plain(exc)}") from exc
    except asyncpg.PostgresError as exc:
        raise Internal(f"the database refused to {doing}: {_plain(exc)}") from exc


def _plain(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


__all__ = ["Change", "PostgresStore"]
