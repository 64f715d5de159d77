"""Small documents that every holmd on one postgres store shares (`holm_documents`): one
row per name, the document's bytes and a version that each write moves on by one. A write
names the version it was made from and is refused when another holmd wrote since
(compare-and-set), so two holmd never lose each other's changes; the caller reads again
and redoes its change. Used for the workspaces and their keys' digests
(holm/http/workspaces.py), which are read on every request and change rarely."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from holm.events.postgres import PostgresStore


class SharedDoc:
    def __init__(self, store: PostgresStore, name: str) -> None:
        self.store = store
        self.name = name

    async def read(self) -> tuple[int, bytes | None]:
        """The version and the document (0 and None before the first write)."""
        rows = await self.store.query(
            "read a shared document",
            "SELECT version, doc FROM holm_documents WHERE name = $1",
            self.name,
        )
        if not rows:
            return 0, None
        return int(rows[0]["version"]), bytes(rows[0]["doc"])

    async def version(self) -> int:
        rows = await self.store.query(
            "read a shared document's version",
            "SELECT version FROM holm_documents WHERE name = $1",
            self.name,
        )
        return int(rows[0]["version"]) if rows else 0

    async def write(self, made_from: int, doc: bytes) -> bool:
        """Write `doc` as version `made_from + 1`; False when the document is not at
        `made_from` any more (another holmd wrote it since)."""
        if made_from == 0:
            rows = await self.store.query(
                "write a shared document",
                "INSERT INTO holm_documents (name, version, doc) VALUES ($1, 1, $2)"
                " ON CONFLICT (name) DO NOTHING RETURNING version",
                self.name,
                doc,
            )
        else:
            rows = await self.store.query(
                "write a shared document",
                "UPDATE holm_documents SET version = version + 1, doc = $3"
                " WHERE name = $1 AND version = $2 RETURNING version",
                self.name,
                made_from,
                doc,
            )
        return bool(rows)


def shared_doc_of(store: object, name: str) -> SharedDoc | None:
    """The shared document `name` of a postgres store; None for the other stores."""
    from holm.events.postgres import PostgresStore

    return SharedDoc(store, name) if isinstance(store, PostgresStore) else None


__all__ = ["SharedDoc", "shared_doc_of"]
