"""The replicas' rows (holm/events/leases.py, shared_keys.py, shared_docs.py, and the
workspaces kept in a shared document) on a real PostgreSQL: two holmd's views of one
database, as two stores on one schema."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from store_kit import PgServer, postgres_store

from holm.events.leases import Leases
from holm.events.objects import FileObjects
from holm.events.postgres import PostgresStore
from holm.events.shared_docs import SharedDoc
from holm.events.shared_keys import Kept, SharedKeys
from holm.wire.entries import BoxDeleted, BoxGone

from .conftest import created, paused


@pytest.fixture
async def two(pg_server: PgServer, tmp_path: Path) -> AsyncIterator[tuple[PostgresStore, ...]]:
    schema = "t_" + secrets.token_hex(6)
    stores = tuple(postgres_store(pg_server, FileObjects(tmp_path), schema) for _ in range(2))
    yield stores
    for store in stores:
        await store.close()


async def test_one_box_has_one_holder_until_its_lease_runs_out(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    a = Leases(two[0], "srv_a", "http://127.0.0.1:1", lease_ms=60_000)
    b = Leases(two[1], "srv_b", "http://127.0.0.1:2", lease_ms=60_000)
    await a.heartbeat()
    await b.heartbeat()
    # Both at once: one takes it, the other is told who has it.
    claims = await asyncio.gather(a.claim("box_1"), b.claim("box_1"))
    assert sorted(claim.taken for claim in claims) == [False, True]
    winner = "srv_a" if claims[0].taken else "srv_b"
    lost = claims[1] if claims[0].taken else claims[0]
    assert lost.holder is not None and lost.holder.owner == winner
    assert lost.holder.replica is not None and not lost.holder.expired
    # Taking it again is the holder's own business only.
    assert (await (a if winner == "srv_a" else b).claim("box_1")).taken
    assert [r.id for r in await a.others()] == ["srv_b"]


async def test_a_lease_that_ran_out_is_taken_by_another_and_says_from_whom(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    short = Leases(two[0], "srv_a", "http://127.0.0.1:1", lease_ms=1)
    other = Leases(two[1], "srv_b", "http://127.0.0.1:2", lease_ms=60_000)
    await short.heartbeat()
    assert (await short.claim("box_1")).taken
    await asyncio.sleep(0.05)
    assert await other.expired() == ["box_1"]
    held = await other.holder("box_1")
    assert held is not None and held.expired and held.replica is None
    taken = await other.claim("box_1")
    assert taken.taken and taken.from_other == "srv_a"
    # Its old holder's heartbeat no longer renews it.
    assert await short.heartbeat() == set()
    assert not (await short.claim("box_1")).taken
    await other.release("box_1")
    assert await other.holder("box_1") is None


async def test_an_idempotency_key_answers_once_across_holmd(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    # srv_a is alive: while it runs the first request, the key waits for it.
    await Leases(two[0], "srv_a", "u", 60_000).heartbeat()
    a, b = SharedKeys(two[0], "srv_a"), SharedKeys(two[1], "srv_b")
    assert (await a.begin("scope", "d1")).state == "mine"
    running = await b.begin("scope", "d1")
    assert running.state == "running" and running.kept is None
    await a.keep("scope", Kept(201, "application/json", [("Location", "/x")], b"{}"))
    kept = await b.begin("scope", "d1")
    assert kept.state == "kept" and kept.kept == Kept(
        201, "application/json", [("Location", "/x")], b"{}"
    )
    assert (await b.begin("scope", "d2")).digest == "d1"


async def test_a_key_whose_holder_died_unanswered_is_taken_again(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    # srv_a never said it is alive (or stopped): its unanswered key is no one's.
    a, b = SharedKeys(two[0], "srv_a"), SharedKeys(two[1], "srv_b")
    assert (await a.begin("scope", "d1")).state == "mine"
    assert (await b.begin("scope", "d1")).state == "mine"


async def test_a_shared_document_refuses_a_write_from_an_old_version(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = SharedDoc(two[0], "workspaces"), SharedDoc(two[1], "workspaces")
    assert await a.read() == (0, None)
    assert await a.write(0, b"one")
    assert not await b.write(0, b"two")
    assert await b.read() == (1, b"one")
    assert await b.write(1, b"two")
    assert not await a.write(1, b"three")
    assert await a.version() == 2


async def test_the_leases_of_removed_boxes_are_forgotten_once_they_run_out(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    # srv_a holds four boxes and dies: box_del was deleted and box_gone vanished just
    # before (their leases never let go), box_new never got its box_created, box_live runs.
    dead = Leases(two[0], "srv_a", "http://127.0.0.1:1", lease_ms=1)
    other = Leases(two[1], "srv_b", "http://127.0.0.1:2", lease_ms=60_000)
    for box in ("box_del", "box_gone", "box_new", "box_live"):
        assert (await dead.claim(box)).taken
    deleted = BoxDeleted(seq=-1, at_ms=2, actor="agent")
    await two[0].append("box_del", [created("box_del"), deleted])
    removed = BoxGone(seq=-1, at_ms=2, actor="system", reason="the runtime lost it")
    await two[0].append("box_gone", [created("box_gone"), removed, paused()])
    await two[0].append("box_live", [created("box_live"), paused()])
    # A lease still renewed is never forgotten, whatever its trace says.
    kept = Leases(two[1], "srv_c", "http://127.0.0.1:3", lease_ms=60_000)
    assert (await kept.claim("box_kept")).taken
    await two[1].append(
        "box_kept", [created("box_kept"), BoxDeleted(seq=-1, at_ms=2, actor="agent")]
    )
    await asyncio.sleep(0.05)
    everyone = ["box_del", "box_gone", "box_new", "box_live", "box_kept"]
    assert await other.forget_removed(everyone) == ["box_del", "box_gone", "box_new"]
    assert await other.expired() == ["box_live"]
    assert (await other.holder("box_kept")) is not None
    assert await other.forget_removed(everyone) == []


async def test_a_key_made_through_another_holmd_right_after_a_look_is_known_at_once(
    two: tuple[PostgresStore, PostgresStore], tmp_path: Path
) -> None:
    from holm.http.workspaces import Workspaces

    here, there = (Workspaces.load(tmp_path / name) for name in ("here", "there"))
    for workspaces, store in ((here, two[0]), (there, two[1])):
        workspaces.path.parent.mkdir()
        await workspaces.share(SharedDoc(store, "workspaces"))
    await here.refresh()  # a look (the periodic one) just before the key is made
    made = await there.create_workspace("team")
    key = await there.create_key(made.id)
    assert here.workspace_of(key.key) is None
    # What a request with an unknown key does: a look, even within half a second of the
    # last (it waits for its turn rather than being refused).
    await here.refresh(at_most_every=0.5)
    assert here.workspace_of(key.key) == made.id
