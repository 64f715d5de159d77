"""Which holmd owns which box, when several share one PostgreSQL database (docs/scale.md).

Each holmd is a row of `holm_replicas` (its id, the URL the others reach it at, alive
until when), renewed by its heartbeat; each box it owns is a row of `holm_box_leases`
(box, owner, until when), renewed with the heartbeat. A lease is taken by compare-and-set
on its row: it is free, expired, or already the taker's; otherwise the row says who holds
it. Times are the database's clock, so that the holmd's clocks need not agree.

With the memory and local stores there is one holmd: `leases_of` answers None and nothing
here runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from holm.wire.entries import BoxDeleted, BoxGone

if TYPE_CHECKING:
    from holm.events.postgres import PostgresStore
    from holm.events.store import TraceStore

# The database's now, in ms.
_NOW = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
# How the line of an entry that removes a box begins (its tag is written first, codec.py):
# a LIKE on these finds one without decoding every line of the trace.
_REMOVING = [f'{{"kind":"{kind.__struct_config__.tag}",%' for kind in (BoxGone, BoxDeleted)]


class Replica(msgspec.Struct, frozen=True):
    id: str
    url: str


class Holder(msgspec.Struct, frozen=True):
    """Who holds a box's lease: the replica (None when it is not alive any more, or its
    row is gone), whether the lease has run out, and in how many ms it does (by the
    database's clock, when it was read): until then no other replica can take it."""

    owner: str
    replica: Replica | None
    expired: bool
    left_ms: int = 0


class Claim(msgspec.Struct, frozen=True):
    """What taking a lease did: `taken` (it is now the taker's; `from_other` when it was
    another replica's, expired) or not, and then who holds it."""

    taken: bool
    from_other: str | None = None
    holder: Holder | None = None


class Leases:
    """The replica and lease rows of one holmd (`me`), on the postgres store's pool."""

    def __init__(self, store: PostgresStore, me: str, url: str, lease_ms: int) -> None:
        self.store = store
        self.me = me
        self.url = url
        self.lease_ms = lease_ms

    async def heartbeat(self) -> set[str]:
        """Say this replica is alive for another lease length and renew its leases; the
        boxes whose lease it still holds (another replica may have taken one that ran
        out while this one was away)."""
        await self.store.query(
            "say this replica is alive",
            f"INSERT INTO holm_replicas (id, url, expires_at_ms) VALUES ($1, $2, {_NOW} + $3)"
            " ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url,"
            " expires_at_ms = EXCLUDED.expires_at_ms",
            self.me,
            self.url,
            self.lease_ms,
        )
        rows = await self.store.query(
            "renew the leases",
            f"UPDATE holm_box_leases SET expires_at_ms = {_NOW} + $2 WHERE owner = $1"
            " RETURNING box",
            self.me,
            self.lease_ms,
        )
        return {row["box"] for row in rows}

    async def claim(self, box: str) -> Claim:
        """Take the lease of `box` when it is free, expired or this replica's already."""
        rows = await self.store.query(
            "take a box's lease",
            "WITH before AS (SELECT owner FROM holm_box_leases WHERE box = $1)"
            " INSERT INTO holm_box_leases AS l (box, owner, expires_at_ms)"
            f" VALUES ($1, $2, {_NOW} + $3)"
            " ON CONFLICT (box) DO UPDATE SET owner = EXCLUDED.owner,"
            " expires_at_ms = EXCLUDED.expires_at_ms"
            f" WHERE l.owner = EXCLUDED.owner OR l.expires_at_ms < {_NOW}"
            " RETURNING (SELECT owner FROM before) AS was",
            box,
            self.me,
            self.lease_ms,
        )
        if rows:
            was = rows[0]["was"]
            return Claim(taken=True, from_other=was if was not in (None, self.me) else None)
        return Claim(taken=False, holder=await self.holder(box))

    async def holder(self, box: str) -> Holder | None:
        """Who holds the lease of `box`; None when no replica ever took it."""
        rows = await self.store.query(
            "find a box's owner",
            f"SELECT l.owner, l.expires_at_ms - {_NOW} AS left_ms, r.url,"
            f" r.expires_at_ms >= {_NOW} AS alive"
            " FROM holm_box_leases l LEFT JOIN holm_replicas r ON r.id = l.owner"
            " WHERE l.box = $1",
            box,
        )
        if not rows:
            return None
        row = rows[0]
        replica = Replica(row["owner"], row["url"]) if row["alive"] else None
        left_ms = int(row["left_ms"])
        return Holder(owner=row["owner"], replica=replica, expired=left_ms < 0, left_ms=left_ms)

    async def release(self, box: str) -> None:
        """Let go of a removed box's lease."""
        await self.store.query(
            "let go of a box's lease",
            "DELETE FROM holm_box_leases WHERE box = $1 AND owner = $2",
            box,
            self.me,
        )

    async def expired(self) -> list[str]:
        """The boxes whose lease has run out (their owner stopped renewing)."""
        rows = await self.store.query(
            "find the leases that ran out",
            f"SELECT box FROM holm_box_leases WHERE expires_at_ms < {_NOW} ORDER BY box",
        )
        return [row["box"] for row in rows]

    async def forget_removed(self, boxes: list[str]) -> list[str]:
        """Delete the run-out leases, among `boxes`, of boxes that no longer exist: removed
        in the log (`gone`, `box_deleted`: deleted just before their holder died, which
        then never let go), or with no trace at all (their holder died before it recorded
        `box_created`, or retention removed the trace). The boxes they were. A lease still
        renewed is never touched: the check and the delete are one statement."""
        rows = await self.store.query(
            "forget the leases of removed boxes",
            "DELETE FROM holm_box_leases l"
            f" WHERE l.box = ANY($1::text[]) AND l.expires_at_ms < {_NOW}"
            " AND (NOT EXISTS (SELECT 1 FROM holm_traces t WHERE t.trace = l.box)"
            "  OR EXISTS (SELECT 1 FROM holm_entries e WHERE e.trace = l.box"
            "   AND (e.line LIKE $2 OR e.line LIKE $3)))"
            " RETURNING box",
            boxes,
            *_REMOVING,
        )
        return sorted(row["box"] for row in rows)

    async def others(self) -> list[Replica]:
        """The other replicas alive now."""
        rows = await self.store.query(
            "list the replicas",
            f"SELECT id, url FROM holm_replicas WHERE id <> $1 AND expires_at_ms >= {_NOW}"
            " ORDER BY id",
            self.me,
        )
        return [Replica(row["id"], row["url"]) for row in rows]

    async def leave(self) -> None:
        """This replica stops: the others no longer send it requests. Its leases stay,
        to run out (or be taken back by it when it starts again first)."""
        await self.store.query(
            "leave the replicas", "DELETE FROM holm_replicas WHERE id = $1", self.me
        )


def leases_of(store: TraceStore, me: str, url: str, lease_ms: int) -> Leases | None:
    """The leases of a holmd on the postgres store; None for the others (one holmd)."""
    from holm.events.postgres import PostgresStore

    if isinstance(store, PostgresStore):
        return Leases(store, me, url, lease_ms)
    return None


__all__ = ["Claim", "Holder", "Leases", "Replica", "leases_of"]
