"""The memory store, a local store, a local store closed and reopened at random points (or
stopped as a crash would, its trace files then cut back anywhere after what its last
checkpoint made durable, as a machine that lost its page cache leaves them, for its journal
to mend), a local store that does every commit in its thread (no AIO fdatasync: local.py),
and a postgres store with its blobs in SeaweedFS (and one of those closed and reopened too)
are given the same random appends and prunes; after every step they read back the same
entries."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from holm.events import LocalStore, MemoryStore, TraceStore, trace_files
from holm.events.codec import SPILL_BYTES
from holm.events.postgres import PostgresStore
from holm.wire.actions import Type
from holm.wire.entries import (
    Acted,
    BoxGone,
    BoxPaused,
    Entry,
    Executed,
    FileWritten,
    FrameSeen,
)

from .conftest import PgServer, S3Server, created, keep_box_state, postgres_store

T = TypeVar("T")
TRACES = ["box_a", "box_b", "server"]

envelope = {
    "seq": st.just(-1),
    "at_ms": st.integers(0, 2**41),
    "actor": st.sampled_from(["agent", "person", "system"]),
}

# Over the spill size in JSON, with characters whose JSON is longer than they are.
big_text = st.builds(
    lambda n, char: char * (n // len(char.encode())),
    st.integers(SPILL_BYTES - 100, 2 * SPILL_BYTES),
    st.sampled_from(["a", "é", "€", "𝄞", "\n", '"']),
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
keys = st.sampled_from(["a", "b", "bytes", "__blob"]) | st.text(max_size=6)
json_values = st.recursive(
    scalars | big_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=6,
)

entries: st.SearchStrategy[Entry] = st.one_of(
    st.builds(BoxPaused, **envelope),
    st.builds(BoxGone, reason=st.text(max_size=30), **envelope),
    st.builds(
        Executed,
        argv=st.lists(st.text(max_size=8), min_size=1, max_size=3),
        code=st.none() | st.integers(-255, 255),
        timed_out=st.booleans(),
        key=st.just("sha256:" + "3" * 64),
        stdout=st.text(max_size=40) | big_text | json_values,
        stderr=st.text(max_size=40) | big_text,
        **envelope,
    ),
    st.builds(
        Acted,
        screen=st.integers(0, 7),
        action=st.builds(Type, text=st.text(max_size=20) | big_text),
        ok=st.booleans(),
        key=st.just("sha256:" + "4" * 64),
        result=json_values,
        **envelope,
    ),
    st.builds(
        FrameSeen,
        screen=st.integers(0, 7),
        frame=st.text("0123456789abcdef", min_size=8, max_size=8).map(lambda h: "px:" + h),
        width=st.integers(1, 4096),
        height=st.integers(1, 4096),
        **envelope,
    ),
    st.builds(FileWritten, path=st.text(max_size=20), bytes=st.integers(0, 2**40), **envelope),
    st.builds(created, box_id=st.sampled_from(TRACES), at_ms=st.integers(0, 2**41)),
)


# The servers of this session, for the state machine (which takes no fixtures).
SERVERS: dict[str, Any] = {}


@pytest.fixture(autouse=True)
def _servers(pg_server: PgServer, s3_server: S3Server) -> None:
    SERVERS.update(pg=pg_server, s3=s3_server)


def same(values: list[Any]) -> bool:
    return all(value == values[0] for value in values)


class StoresAgree(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.folder = Path(tempfile.mkdtemp(prefix="holm-agree-"))
        self.memory = MemoryStore()
        self.local = LocalStore(self.folder / "kept_open")
        self.reopened = LocalStore(self.folder / "reopened")
        # Sizes of the reopened store's trace files that a checkpoint made durable.
        self.durable: dict[Path, int] = {}
        self.in_threads = LocalStore(self.folder / "in_threads", aio=False)
        self.postgres = postgres_store(SERVERS["pg"], SERVERS["s3"].objects())
        # Reopened on the same schema and bucket prefix: a holmd restarted on its database.
        self.pg_place = ("t_" + secrets.token_hex(6), secrets.token_hex(6))
        self.pg_reopened = self.reopened_pg()

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(work)

    def reopened_pg(self) -> PostgresStore:
        schema, prefix = self.pg_place
        return postgres_store(SERVERS["pg"], SERVERS["s3"].objects(prefix), schema)

    @property
    def stores(self) -> list[TraceStore]:
        return [
            self.memory,
            self.local,
            self.reopened,
            self.in_threads,
            self.postgres,
            self.pg_reopened,
        ]

    @rule(trace=st.sampled_from(TRACES), batch=st.lists(entries, min_size=1, max_size=4))
    def append(self, trace: str, batch: list[Entry]) -> None:
        appended = [self.run(store.append(trace, batch)) for store in self.stores]
        assert same(appended)

    @rule(
        trace=st.sampled_from(TRACES),
        batches=st.lists(st.lists(entries, min_size=1, max_size=3), min_size=2, max_size=6),
    )
    def append_concurrently(self, trace: str, batches: list[list[Entry]]) -> None:
        async def all_at_once(store: TraceStore) -> list[list[Entry]]:
            return list(await asyncio.gather(*(store.append(trace, b) for b in batches)))

        appended = [self.run(all_at_once(store)) for store in self.stores]
        assert same(appended)

    @rule(data=st.data())
    def prune(self, data: st.DataObject) -> None:
        # Cut where an entry is, so that prunes drop some of a trace and keep some.
        times = [e.at_ms for t in TRACES for e in self.run(self.memory.read(t, limit=100_000))]
        kept_for = self.memory.keep_entries_secs * 1000
        now_ms = data.draw(st.sampled_from(times or [0])) + kept_for + data.draw(st.integers(0, 1))
        reports = [self.run(store.prune(now_ms, keep_box_state)) for store in self.stores]
        assert same(reports)
        self.durable = self.sizes()  # a prune that changes a file checkpoints first

    @rule()
    def reopen(self) -> None:
        self.run(self.reopened.close())
        self.reopened = LocalStore(self.folder / "reopened")
        self.durable = self.sizes()
        self.run(self.pg_reopened.close())
        self.pg_reopened = self.reopened_pg()

    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        self.run(self.reopened._stop(checkpoint=False))
        for path, size in self.sizes().items():
            kept = data.draw(st.integers(min(self.durable.get(path, 0), size), size))
            os.truncate(path, kept)
        self.reopened = LocalStore(self.folder / "reopened")
        self.run(self.reopened.traces())
        self.durable = self.sizes()

    def sizes(self) -> dict[Path, int]:
        return {path: path.stat().st_size for path in trace_files(self.folder / "reopened")}

    @rule(trace=st.sampled_from(TRACES), after=st.integers(-1, 40), limit=st.integers(0, 30))
    def read_a_page(self, trace: str, after: int, limit: int) -> None:
        pages = [self.run(store.read(trace, after, limit)) for store in self.stores]
        assert same(pages)

    @invariant()
    def stores_agree(self) -> None:
        for trace in TRACES:
            read = [self.run(store.read(trace, limit=100_000)) for store in self.stores]
            assert same(read)
            infos = [self.run(store.info(trace)) for store in self.stores]
            assert same(infos)
            # Whole from `first_seq` on; before it, what the prune kept.
            seqs = [entry.seq for entry in read[0]]
            first = 0 if infos[0] is None else infos[0].first_seq
            assert seqs == sorted(set(seqs))
            assert [seq for seq in seqs if seq >= first] == list(
                range(first, len(seqs) and seqs[-1] + 1)
            )
        listed = [self.run(store.traces()) for store in self.stores]
        assert same(listed)

    def teardown(self) -> None:
        for store in self.stores:
            self.run(store.close())
        self.loop.close()
        shutil.rmtree(self.folder)


TestStoresAgree = StoresAgree.TestCase
TestStoresAgree.settings = settings(
    max_examples=20,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
