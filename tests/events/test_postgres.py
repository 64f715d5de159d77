"""What the postgres store does beyond the contract every store passes: two stores (two
holmd) on one database never give one seq twice, the feed of every trace (`changes`) is
gap-free in commit order, the schema is made once, and a database or S3 server stopped
under load answers `unavailable` (retryable), loses nothing acknowledged, and is written to
again once it is back. Real servers throughout (store_kit)."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from unittest.mock import patch

import asyncpg
import pytest

from holm.config import load_config
from holm.engine.journal import Journal
from holm.errors import HolmError, Unavailable
from holm.events import open_store
from holm.events.codec import SPILL_BYTES, encode_entry
from holm.events.objects import FileObjects, blob_key
from holm.events.pg_schema import MIGRATIONS
from holm.events.postgres import PostgresStore
from holm.events.recent import RecentLines
from holm.events.s3 import S3Objects
from holm.events.trace_keys import trace_keys_of
from holm.projections.box_state import borne
from holm.projections.events_feed import EventsFeed
from holm.wire.entries import Acted

from .conftest import (
    DAY_MS,
    PgServer,
    S3Server,
    clicked,
    created,
    executed,
    frame_seen,
    free_ports,
    now_ms,
    postgres_store,
)


@pytest.fixture
async def two(pg_server: PgServer, tmp_path: Path) -> AsyncIterator[tuple[PostgresStore, ...]]:
    """Two stores on one schema and one blob folder: two holmd on one database."""
    schema = "t_" + secrets.token_hex(6)
    stores = tuple(postgres_store(pg_server, FileObjects(tmp_path), schema) for _ in range(2))
    yield stores
    for store in stores:
        await store.close()


def xs(entries: list[object]) -> list[int]:
    return [entry.action.at.x for entry in entries if isinstance(entry, Acted)]  # type: ignore[union-attr]


async def test_a_second_writer_of_a_trace_is_numbered_after_the_first(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    first, second = two
    await first.append("box_1", [clicked(0)])
    await second.append("box_1", [clicked(1), clicked(2)])
    # `first` last saw seq 0: its guess is stale, so it numbers again.
    again = await first.append("box_1", [clicked(3)])

    assert [entry.seq for entry in again] == [3]
    assert first.renumbered == 1
    read = await second.read("box_1")
    assert [entry.seq for entry in read] == [0, 1, 2, 3]
    assert xs(read) == [0, 1, 2, 3]


async def test_a_trace_another_store_pruned_away_starts_again_from_seq_zero(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    pruner, writer = two
    # Old entries (at_ms 1 000): the trace goes whole at the next prune.
    await writer.append("box_1", [created(at_ms=1_000), clicked(1)])
    report = await pruner.prune(now_ms())
    assert report.boxes == 1
    # `writer` last saw seq 1: the trace it would go on from is gone, so it numbers again.
    again = await writer.append("box_1", [created(), clicked(2)])

    assert [entry.seq for entry in again] == [0, 1]
    assert writer.renumbered == 1
    assert [entry.seq for entry in await pruner.read("box_1")] == [0, 1]


async def test_two_stores_appending_to_one_trace_at_once_never_share_a_seq(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    async def write(store: PostgresStore, base: int) -> list[list[int]]:
        async def one(i: int) -> list[int]:
            got = await store.append("box_1", [clicked(base + 10 * i), clicked(base + 10 * i + 1)])
            return [entry.seq for entry in got]

        return list(await asyncio.gather(*(one(i) for i in range(150))))

    results = await asyncio.gather(write(two[0], 0), write(two[1], 5))

    given = [seq for result in results for seqs in result for seq in seqs]
    # Each append's two entries together; no seq given twice; none missing.
    assert all(seqs[1] == seqs[0] + 1 for result in results for seqs in result)
    assert sorted(given) == list(range(600))
    read = await two[0].read("box_1", limit=1000)
    assert [entry.seq for entry in read] == list(range(600))
    assert sorted(xs(read)) == sorted(
        [b + 10 * i + j for b in (0, 5) for i in range(150) for j in (0, 1)]
    )
    assert two[0].renumbered + two[1].renumbered > 0


async def test_changes_of_every_trace_come_in_commit_order_without_a_gap(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    """A reader paging `changes` while two writers append never skips a pos that commits
    after one it has seen."""
    writing = True
    seen: list[int] = []

    async def follow() -> None:
        after = -1
        while writing or after < 799:
            page = await two[0].changes(after, limit=37)
            for change in page:
                assert change.pos == after + 1, f"pos {after + 1} skipped"
                after = change.pos
                seen.append(change.pos)
            await asyncio.sleep(0)

    async def write(store: PostgresStore, base: int) -> None:
        async def one(i: int) -> None:
            await store.append(f"box_{i % 5}", [clicked(base + i), clicked(base + i)])

        await asyncio.gather(*(one(i) for i in range(200)))

    reader = asyncio.create_task(follow())
    await asyncio.gather(write(two[0], 0), write(two[1], 1000))
    writing = False
    await asyncio.wait_for(reader, 60)

    assert seen == list(range(800))
    changes = await two[1].changes(-1, limit=1000)
    by_trace: dict[str, list[int]] = {}
    for change in changes:
        by_trace.setdefault(change.trace, []).append(change.entry.seq)
    # Within a trace, commit order is seq order.
    assert all(seqs == list(range(len(seqs))) for seqs in by_trace.values())


async def test_the_schema_is_made_once_and_lines_are_kept_as_the_jsonl_holds_them(
    pg_server: PgServer, tmp_path: Path
) -> None:
    schema = "t_" + secrets.token_hex(6)
    written = []
    for x in range(2):
        store = postgres_store(pg_server, FileObjects(tmp_path), schema)
        written += await store.append("box_1", [clicked(x)])
        await store.close()

    conn = await asyncpg.connect(pg_server.url)
    try:
        versions = await conn.fetch(f'SELECT version FROM "{schema}".holm_schema_version')
        lines = await conn.fetch(f'SELECT line FROM "{schema}".holm_entries ORDER BY seq')
    finally:
        await conn.close()
    assert [row["version"] for row in versions] == list(range(1, len(MIGRATIONS) + 1))
    assert [row["line"].encode() + b"\n" for row in lines] == [encode_entry(e) for e in written]


async def test_a_trace_key_is_shared_by_every_store_on_the_database_and_shredded_for_all(
    pg_server: PgServer, tmp_path: Path
) -> None:
    """Two holmd on one database: a trace's data key kept by one opens on the other, the
    first kept wins, and a shred on either is gone for both (docs/trace.md, Shredding)."""
    schema = "t_" + secrets.token_hex(6)
    one, two = (postgres_store(pg_server, FileObjects(tmp_path), schema) for _ in range(2))
    try:
        keys_one, keys_two = trace_keys_of(one), trace_keys_of(two)
        assert await keys_two.get("box_k") is None
        await keys_one.put("box_k", b"sealed-1")
        await keys_two.put("box_k", b"sealed-2")
        assert await keys_two.get("box_k") == await keys_one.get("box_k") == b"sealed-1"
        assert await keys_two.drop("box_k") is True
        assert await keys_one.get("box_k") is None
        assert await keys_one.drop("box_k") is False
    finally:
        await one.close()
        await two.close()


# A database and an S3 server of their own, to stop and start.


@pytest.fixture
def own_s3() -> Iterator[S3Server]:
    folder = Path("/tmp") / f"holm-test-s3own-{secrets.token_hex(4)}"
    env = {
        "HOLM_SEAWEEDFS_DIR": str(folder),
        "HOLM_SEAWEEDFS_PORT": str(free_ports(8)),
        # Its filer waits 15 s for subscribers on SIGTERM; the test need not.
        "HOLM_SEAWEEDFS_STOP_SECS": "2",
    }
    server = S3Server(env, folder)
    server.start()
    try:
        yield server
    finally:
        server.stop(purge=True)


class Load:
    """Writers appending unique clicks in a loop, keeping what was acknowledged and every
    error they were answered with."""

    def __init__(self, store: PostgresStore, writers: int = 8) -> None:
        self.store = store
        self.acked: set[int] = set()
        self.errors: list[HolmError] = []
        self.running = True
        self._next = 0
        self._tasks = [asyncio.create_task(self._write(w)) for w in range(writers)]

    async def _write(self, writer: int) -> None:
        while self.running:
            x = self._next
            self._next += 1
            try:
                await self.store.append(f"box_{writer % 3}", [clicked(x)])
            except HolmError as exc:
                self.errors.append(exc)
                await asyncio.sleep(0.05)
                continue
            self.acked.add(x)

    async def acked_more(self, count: int) -> None:
        target = len(self.acked) + count
        while len(self.acked) < target:
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        self.running = False
        await asyncio.gather(*self._tasks)


async def test_a_database_stopped_under_load_answers_unavailable_and_loses_nothing(
    own_pg: PgServer, s3_server: S3Server
) -> None:
    store = postgres_store(own_pg, s3_server.objects())
    try:
        await store.put_frame("box_0", "px:1", b"\x89PNG kept")
        load = Load(store)
        await asyncio.wait_for(load.acked_more(200), 60)

        await asyncio.to_thread(own_pg.stop)
        with pytest.raises(Unavailable) as refused:
            await store.append("box_0", [clicked(-1)])
        assert refused.value.retryable
        errors_while_down = len(load.errors)
        acked_before = set(load.acked)
        # Frames are read from the object store alone; what this store wrote last, from
        # memory (each trace here is shorter than what it keeps).
        assert await store.get_frame("box_0", "px:1") == b"\x89PNG kept"
        kept = [e for t in range(3) for e in await store.read(f"box_{t}", limit=100_000)]
        assert acked_before <= set(xs(kept))
        with pytest.raises(Unavailable):
            await store.read("box_never_written")

        await asyncio.to_thread(own_pg.start)
        await asyncio.wait_for(load.acked_more(200), 60)
        await load.stop()
    finally:
        await store.close()

    assert errors_while_down > 0
    assert all(isinstance(e, Unavailable) and e.retryable for e in load.errors), {
        (type(e).__name__, e.message) for e in load.errors
    }
    reader = postgres_store(own_pg, s3_server.objects(), store._schema)
    try:
        read = [e for t in range(3) for e in await reader.read(f"box_{t}", limit=100_000)]
        for trace in range(3):
            seqs = [e.seq for e in await reader.read(f"box_{trace}", limit=100_000)]
            assert seqs == list(range(len(seqs)))
    finally:
        await reader.close()
    assert load.acked <= set(xs(read))


async def test_an_s3_server_stopped_under_load_answers_unavailable_and_loses_nothing(
    pg_server: PgServer, own_s3: S3Server
) -> None:
    store = postgres_store(pg_server, own_s3.objects("load"))
    big = "b" * (2 * SPILL_BYTES)
    kept: dict[str, bytes] = {}
    errors: list[HolmError] = []
    running = True

    async def frames() -> None:
        n = 0
        while running:
            name, png = f"px:{n}", f"\x89PNG {n}".encode()
            n += 1
            try:
                await store.put_frame("box_1", name, png)
            except HolmError as exc:
                errors.append(exc)
                await asyncio.sleep(0.05)
                continue
            kept[name] = png

    async def kept_more(count: int) -> None:
        target = len(kept) + count
        while len(kept) < target:
            await asyncio.sleep(0.01)

    try:
        writers = [asyncio.create_task(frames()) for _ in range(4)]
        await asyncio.wait_for(kept_more(50), 60)
        spilled = await store.append("box_1", [executed(stdout=big)])

        await asyncio.to_thread(own_s3.stop)
        with pytest.raises(Unavailable) as refused:
            await store.put_frame("box_1", "px:down", b"\x89PNG down")
        assert refused.value.retryable
        with pytest.raises(Unavailable):
            await store.get_frame("box_1", "px:0")
        with pytest.raises(Unavailable):
            await store.append("box_1", [executed(stdout=big + "x")])
        # What needs no object goes on.
        small = await store.append("box_1", [clicked(7)])

        await asyncio.to_thread(own_s3.start)
        await asyncio.wait_for(kept_more(50), 60)
        running = False
        await asyncio.gather(*writers)
        again = await store.append("box_1", [executed(stdout=big + "y")])

        assert errors and all(isinstance(e, Unavailable) and e.retryable for e in errors)
        for name, png in kept.items():
            assert await store.get_frame("box_1", name) == png
        read = await store.read("box_1")
        assert read == spilled + small + again
    finally:
        await store.close()


def test_recent_lines_serve_only_a_read_their_unbroken_run_covers() -> None:
    recent = RecentLines(entries=4)
    recent.add("box_1", [(0, 10, "a"), (1, 11, "b")])
    assert recent.page("box_1", None, 10) == ["a", "b"]
    info = recent.info("box_1")
    assert info is not None
    assert (info.entries, info.max_seq, info.first_at_ms, info.last_at_ms) == (2, 1, 10, 11)
    recent.add("box_1", [(2, 12, "c"), (3, 13, "d"), (4, 14, "e")])
    # Seq 0 has gone from the run: a read from the start, or from 0, is not covered.
    assert recent.page("box_1", None, 10) is None
    assert recent.page("box_1", -1, 10) is None
    assert recent.info("box_1") is None
    assert recent.page("box_1", 0, 2) == ["b", "c"]
    assert recent.page("box_1", 4, 10) == []
    assert recent.max_seq("box_1") == 4
    # Another writer appended 5 and 6: the run starts again at 7.
    recent.add("box_1", [(7, 17, "h")])
    assert recent.page("box_1", 5, 10) is None
    assert recent.page("box_1", 6, 10) == ["h"]
    assert recent.page("box_2", None, 10) is None
    assert recent.max_seq("box_2") is None


@pytest.mark.parametrize(
    ("environ", "says"),
    [
        ({"HOLM_STORAGE_BACKEND": "postgres"}, "needs HOLM_DATABASE_URL"),
        ({"HOLM_STORAGE_BACKEND": "local", "HOLM_BLOB_URL": "s3://b/p"}, "is for"),
        (
            {"HOLM_STORAGE_BACKEND": "postgres", "HOLM_DATABASE_URL": "postgresql://h/d"}
            | {"HOLM_BLOB_URL": "ftp://b/p"},
            "is not s3://",
        ),
        (
            {"HOLM_STORAGE_BACKEND": "postgres", "HOLM_DATABASE_URL": "postgresql://h/d"}
            | {"HOLM_BLOB_URL": "s3://b/p", "AWS_ACCESS_KEY_ID": "k"},
            "AWS_SECRET_ACCESS_KEY",
        ),
    ],
)
def test_store_settings_that_do_not_fit_are_refused_when_read(
    environ: dict[str, str], says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        load_config(environ)


def test_postgres_settings_that_fit_open_a_store_of_each_kind(tmp_path: Path) -> None:
    base = {
        "HOLM_STORAGE_BACKEND": "postgres",
        "HOLM_DATABASE_URL": "postgresql://h/d",
        "HOLM_STATE_DIR": str(tmp_path),
    }
    s3 = {"HOLM_BLOB_URL": "s3://bucket/pre/fix", "AWS_ACCESS_KEY_ID": "k"}
    cases = [
        (base, FileObjects),
        (base | {"HOLM_BLOB_URL": f"file://{tmp_path}/objects"}, FileObjects),
        (base | s3 | {"AWS_SECRET_ACCESS_KEY": "s"}, S3Objects),
    ]
    for environ, kind in cases:
        with patch.dict(os.environ, environ):
            store = open_store(load_config(environ))
        assert isinstance(store, PostgresStore) and isinstance(store.objects, kind)
    assert (store.objects.bucket, store.objects.prefix) == ("bucket", "pre/fix")  # type: ignore[attr-defined]


async def test_a_second_store_folds_a_pruned_trace_to_the_same_box_state(
    pg_server: PgServer, s3_server: S3Server
) -> None:
    """A restarted holmd (a new store on the same database) after a prune by age."""
    start = now_ms() - 7 * DAY_MS
    schema, prefix = "t_" + secrets.token_hex(6), secrets.token_hex(6)
    store = postgres_store(pg_server, s3_server.objects(prefix), schema)
    journal = Journal(store, EventsFeed())
    await journal.append("box_1", [created(at_ms=start)])
    for minute in range(1, 31):
        at = start + minute * 60_000
        await journal.append("box_1", [clicked(minute, at_ms=at), frame_seen(f"px:{minute}", at)])
    live = journal.state("box_1")
    report = await store.prune(start + 7 * DAY_MS + 15 * 60_000, journal.keep)
    await store.close()

    assert report.entries > 15
    again_store = postgres_store(pg_server, s3_server.objects(prefix), schema)
    again = Journal(again_store, EventsFeed())
    await again.rebuild()
    assert borne(again.state("box_1")) == borne(live)
    info = await again_store.info("box_1")
    assert info is not None and info.entries == 1 + 2 * 30 - report.entries
    await again_store.close()


async def test_the_blobs_of_pruned_entries_go_from_the_bucket(
    pg_server: PgServer, s3_server: S3Server
) -> None:
    start = now_ms() - 7 * DAY_MS
    objects = s3_server.objects()
    store = postgres_store(pg_server, objects)
    await store.append("box_1", [created(at_ms=start)])
    await store.append("box_1", [executed(stdout="a" * (SPILL_BYTES + 1), at_ms=start + 1)])
    await store.append("box_1", [executed(stdout="b" * (SPILL_BYTES + 1), at_ms=now_ms())])
    conn = await asyncpg.connect(pg_server.url)
    try:
        refs = [r["ref"] for r in await conn.fetch(f'SELECT ref FROM "{store._schema}".holm_blobs')]
        # Both written as long ago as their entries.
        await conn.execute(f'UPDATE "{store._schema}".holm_blobs SET at_ms = $1', start)
    finally:
        await conn.close()
    assert len(refs) == 2
    assert all([await objects.get(blob_key(ref)) for ref in refs])

    report = await store.prune(now_ms(), lambda trace, old: {0})

    assert report.entries == 1
    kept = [ref for ref in refs if await objects.get(blob_key(ref)) is not None]
    assert len(kept) == 1
    read = await store.read("box_1")
    assert [entry.seq for entry in read] == [0, 2]
    assert read[1].stdout == "b" * (SPILL_BYTES + 1)  # type: ignore[union-attr]
    await store.close()
