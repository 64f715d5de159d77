"""A lease row left by a holmd that died just after deleting its box (or before it recorded
`box_created`) is removed by another holmd's heartbeat (docs/scale.md, Take-over): no
runtime lists such a box, so nothing else would. A real holmd (the in-memory runtime) on
a database of its own on the test PostgreSQL."""

from __future__ import annotations

import asyncio
import time

import asyncpg
from kits.holmd import Holmd
from replica_kit import fresh_database
from store_kit import PgServer

from holm.client import SyncHolmClient

LEASE_MS = 600
# A heartbeat comes every third of a lease; on a loaded 2-core host, give it many.
BOUND_S = 30.0


async def leases(url: str) -> dict[str, str]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT box, owner FROM holm_box_leases")
    finally:
        await conn.close()
    return {row["box"]: row["owner"] for row in rows}


async def left_by_a_dead_holmd(url: str, boxes: list[str]) -> None:
    """Lease rows of a holmd that is gone, run out long ago, as its death leaves them."""
    conn = await asyncpg.connect(url)
    try:
        await conn.executemany(
            "INSERT INTO holm_box_leases (box, owner, expires_at_ms) VALUES ($1, 'srv_dead', 0)"
            " ON CONFLICT (box) DO UPDATE SET owner = 'srv_dead', expires_at_ms = 0",
            [(box,) for box in boxes],
        )
    finally:
        await conn.close()


def test_the_leases_of_boxes_deleted_before_their_holmd_died_are_removed(
    pg_server: PgServer,
) -> None:
    url = asyncio.run(fresh_database(pg_server))
    server = Holmd(
        runtime="memory",
        HOLM_STORAGE_BACKEND="postgres",
        HOLM_DATABASE_URL=url,
        HOLM_LEASE_MS=str(LEASE_MS),
    )
    server.start()
    try:
        with SyncHolmClient(server.url, server.token) as client:
            deleted = client.create_box().id
            client.delete_box(deleted)
            live = client.create_box().id
            # As if another holmd had deleted `deleted` and died before letting go of its
            # lease, and died holding one for a box it never recorded.
            asyncio.run(left_by_a_dead_holmd(url, [deleted, "box_never_recorded"]))
            deadline = time.monotonic() + BOUND_S
            held = asyncio.run(leases(url))
            while (deleted in held or "box_never_recorded" in held) and (
                time.monotonic() < deadline
            ):
                time.sleep(0.1)
                held = asyncio.run(leases(url))
            assert deleted not in held and "box_never_recorded" not in held, held
            # The live box's lease is its holmd's still.
            assert held.get(live) is not None and held[live] != "srv_dead", held
    finally:
        server.close()
