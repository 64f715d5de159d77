"""Each trace's own data key, kept apart from its entries, so that what the entries hold
sealed under it (a person's typed text, docs/trace.md) can be shredded for good by deleting
one small record, while the entries, their seq and the rest of the trace stay.

A key is stored as given (the engine seals it under the server's key first): the `local`
store keeps one file a trace under `trace-keys/` of the state dir (mode 0600, written whole
and fsynced; a shred unlinks it and fsyncs the folder), the `memory` store a dict. Blocking
file work runs in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from holm.events.blobs import write_atomic
from holm.events.store import TraceStore

if TYPE_CHECKING:
    from holm.events.postgres import PostgresStore

KEYS_DIR = "trace-keys"


class TraceKeys(Protocol):
    async def get(self, trace: str) -> bytes | None: ...

    async def put(self, trace: str, sealed: bytes) -> None:
        """Keep the trace's key; a key already kept stays (the first one wins)."""
        ...

    async def drop(self, trace: str) -> bool:
        """Shred the trace's key; whether there was one."""
        ...


class MemoryTraceKeys:
    def __init__(self) -> None:
        self._keys: dict[str, bytes] = {}

    async def get(self, trace: str) -> bytes | None:
        return self._keys.get(trace)

    async def put(self, trace: str, sealed: bytes) -> None:
        self._keys.setdefault(trace, sealed)

    async def drop(self, trace: str) -> bool:
        return self._keys.pop(trace, None) is not None


class LocalTraceKeys:
    def __init__(self, state_dir: Path) -> None:
        self.folder = state_dir / KEYS_DIR

    def _path(self, trace: str) -> Path:
        # A trace id is a box id or "server"; hashed so no name can reach outside the folder.
        return self.folder / hashlib.sha256(trace.encode()).hexdigest()

    async def get(self, trace: str) -> bytes | None:
        def read() -> bytes | None:
            with contextlib.suppress(FileNotFoundError):
                return self._path(trace).read_bytes()
            return None

        return await asyncio.to_thread(read)

    async def put(self, trace: str, sealed: bytes) -> None:
        def write() -> None:
            if not self._path(trace).exists():
                write_atomic(self._path(trace), sealed, mode=0o600)

        await asyncio.to_thread(write)

    async def drop(self, trace: str) -> bool:
        def unlink() -> bool:
            try:
                self._path(trace).unlink()
            except FileNotFoundError:
                return False
            folder = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
            return True

        return await asyncio.to_thread(unlink)


class PostgresTraceKeys:
    """A row of `holm_trace_keys` a trace, in the postgres store's database: every replica
    on it opens, and a shred on one removes for all."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    async def get(self, trace: str) -> bytes | None:
        return await self._store.get_trace_key(trace)

    async def put(self, trace: str, sealed: bytes) -> None:
        await self._store.put_trace_key(trace, sealed)

    async def drop(self, trace: str) -> bool:
        return await self._store.drop_trace_key(trace)


def trace_keys_of(store: TraceStore) -> TraceKeys:
    """The keys beside `store`'s entries: files for a store on disk, rows in the postgres
    store's database, else in memory."""
    from holm.events.local import LocalStore
    from holm.events.postgres import PostgresStore

    if isinstance(store, LocalStore):
        return LocalTraceKeys(store.state_dir)
    if isinstance(store, PostgresStore):
        return PostgresTraceKeys(store)
    return MemoryTraceKeys()


__all__ = ["KEYS_DIR", "LocalTraceKeys", "MemoryTraceKeys", "TraceKeys", "trace_keys_of"]
