"""Idempotency keys that every holmd on one postgres store honours (http/idempotency.py
keeps them in memory when there is one holmd). A key's row is taken by the holmd that runs
its first request (`holder`), then holds that request's answer; another request with the
key, on any holmd, replays the answer, or waits while the first still runs. A row whose
holder stopped (it is no live replica) before answering is taken again, so a key is never
stuck; an answer with a 5xx status is not kept. Rows go a day after they were made."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Literal

import msgspec

if TYPE_CHECKING:
    from holm.events.postgres import PostgresStore

KEEP_MS = 24 * 3600 * 1000
_NOW = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"


class Kept(msgspec.Struct, frozen=True):
    """An answer kept under a key."""

    status: int
    content_type: str
    headers: list[tuple[str, str]]
    body: bytes


class Found(msgspec.Struct, frozen=True):
    """What a key's row says: taken now by this holmd (`mine`), answered (`kept`), or
    still running elsewhere (`running`); `digest` is the first request's body's."""

    state: Literal["mine", "kept", "running"]
    digest: str
    kept: Kept | None = None


def scope_name(*parts: str) -> str:
    """The row's key: a hash of the caller, method, path and key, so that no key or path
    is kept as it was sent."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


class SharedKeys:
    def __init__(self, store: PostgresStore, me: str) -> None:
        self.store = store
        self.me = me

    async def begin(self, scope: str, digest: str) -> Found:
        rows = await self.store.query(
            "take an idempotency key",
            "INSERT INTO holm_idempotency (scope, digest, holder, made_at_ms)"
            f" VALUES ($1, $2, $3, {_NOW}) ON CONFLICT (scope) DO NOTHING RETURNING scope",
            scope,
            digest,
            self.me,
        )
        if rows:
            return Found("mine", digest)
        rows = await self.store.query(
            "read an idempotency key",
            "SELECT k.digest, k.holder, k.status, k.content_type, k.headers, k.body,"
            f" k.made_at_ms < {_NOW} - {KEEP_MS} AS old,"
            f" coalesce(r.expires_at_ms >= {_NOW}, false) AS alive"
            " FROM holm_idempotency k LEFT JOIN holm_replicas r ON r.id = k.holder"
            " WHERE k.scope = $1",
            scope,
        )
        if not rows:
            return await self.begin(scope, digest)
        row = rows[0]
        if row["old"] or (row["status"] is None and not row["alive"] and row["holder"] != self.me):
            # Past its day, or its holder died before it answered: taken again.
            await self.store.query(
                "take an idempotency key again",
                "DELETE FROM holm_idempotency WHERE scope = $1 AND holder = $2",
                scope,
                row["holder"],
            )
            return await self.begin(scope, digest)
        if row["status"] is None:
            return Found("running", row["digest"])
        kept = Kept(
            status=row["status"],
            content_type=row["content_type"],
            headers=[tuple(pair) for pair in msgspec.json.decode(row["headers"])],
            body=bytes(row["body"]),
        )
        return Found("kept", row["digest"], kept)

    async def keep(self, scope: str, kept: Kept) -> None:
        await self.store.query(
            "keep an idempotent answer",
            "UPDATE holm_idempotency SET status = $3, content_type = $4, headers = $5, body = $6"
            " WHERE scope = $1 AND holder = $2",
            scope,
            self.me,
            kept.status,
            kept.content_type,
            msgspec.json.encode(kept.headers).decode(),
            kept.body,
        )

    async def drop(self, scope: str) -> None:
        await self.store.query(
            "let go of an idempotency key",
            "DELETE FROM holm_idempotency WHERE scope = $1 AND holder = $2",
            scope,
            self.me,
        )

    async def forget_old(self) -> None:
        await self.store.query(
            "forget old idempotency keys",
            f"DELETE FROM holm_idempotency WHERE made_at_ms < {_NOW} - {KEEP_MS}",
        )


__all__ = ["Found", "Kept", "SharedKeys", "scope_name"]
