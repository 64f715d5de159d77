"""Workspaces and their API keys, kept in `<state_dir>/workspaces.json` (with replicas, in
PostgreSQL: `Workspaces.share`, holm/events/shared_docs.py).

- A key is `holm_sk_` and 32 random bytes (`secrets.token_urlsafe`). It is shown once, when
  it is made; the file keeps its SHA-256 only, so a copy of the file opens nothing. A key
  of 256 random bits needs no slow hash: nothing can be guessed from its digest.
- The file is written whole or not at all, with mode 0600 from the moment it exists
  (`write_atomic`), and read once at start; a change is answered only once it is on disk,
  and takes effect with that answer (a removed key is refused by the next request).
- With replicas, each holmd reads the document again every second (`follow`). While
  PostgreSQL is down, the workspaces and keys last read keep answering; the outage is one
  line in the log when it begins and one when the database answers again, no traceback.
- A request's key is looked up by its digest. The lookup's time may say something of the
  digest, never of the key: the digest of a 256-bit secret cannot be turned back into it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import secrets
import time
from pathlib import Path

import msgspec

from holm.engine.reaper import outages_told_once
from holm.errors import BadRequest, Denied, NotFound, Unavailable
from holm.events.blobs import write_atomic
from holm.events.shared_docs import SharedDoc
from holm.wire.api import KeyMade, KeyView, WorkspaceView

log = logging.getLogger(__name__)

WORKSPACES_FILE = "workspaces.json"
KEY_PREFIX = "holm_sk_"
FILE_MODE = 0o600


class KeptKey(msgspec.Struct, kw_only=True, frozen=True):
    id: str
    workspace: str
    # The hex SHA-256 of the key: all that is kept of it.
    sha256: str
    created_at_ms: int


class Kept(msgspec.Struct, kw_only=True, frozen=True):
    """The file's content."""

    workspaces: list[WorkspaceView] = msgspec.field(default_factory=list)
    keys: list[KeptKey] = msgspec.field(default_factory=list)


def digest_of(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _view(kept: KeptKey) -> KeyView:
    return KeyView(id=kept.id, workspace=kept.workspace, created_at_ms=kept.created_at_ms)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Workspaces:
    """The server's workspaces and keys: read at start (`load`), changed one at a time."""

    def __init__(self, path: Path, kept: Kept) -> None:
        self.path = path
        self._kept = kept
        self._by_digest = {key.sha256: key for key in kept.keys}
        self._changing = asyncio.Lock()
        # With replicas, the workspaces live in PostgreSQL (`share`), at this version.
        self._shared: SharedDoc | None = None
        self._version = 0
        self._looked = 0.0
        self._looking = asyncio.Lock()
        self.follow = outages_told_once("workspaces, kept as last read", self.refresh, log)

    async def share(self, doc: SharedDoc) -> None:
        """With replicas (a postgres store, docs/scale.md): the workspaces are the shared
        document `doc`, which every holmd reads and writes; what this holmd's file held is
        moved there when the document has none yet."""
        version, raw = await doc.read()
        if raw is None and (self._kept.workspaces or self._kept.keys):
            await doc.write(0, msgspec.json.encode(self._kept))
            version, raw = await doc.read()
        self._shared = doc
        self._take(version, raw)

    async def refresh(self, at_most_every: float = 0.0) -> None:
        """Read what another holmd changed (a key made or removed there); at most once a
        `at_most_every` seconds, for a caller that an unknown key sends here. A caller
        that comes within that time waits for the next look rather than none, or a key
        made just after the last look would be refused here; the callers that wait share
        one look, which begins after each of them came."""
        if self._shared is None:
            return
        came = time.monotonic()
        async with self._looking:
            if self._looked > came:
                return
            wait = self._looked + at_most_every - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._looked = time.monotonic()
            if await self._shared.version() != self._version:
                self._take(*await self._shared.read())

    def _take(self, version: int, raw: bytes | None) -> None:
        kept = Kept() if raw is None else msgspec.json.decode(raw, type=Kept)
        self._version = version
        self._kept = kept
        self._by_digest = {key.sha256: key for key in kept.keys}

    @classmethod
    def load(cls, state_dir: Path) -> Workspaces:
        """The workspaces kept in `state_dir` (none when there is no file yet). A file that
        cannot be read or decoded raises `ValueError`: holmd says why and does not start,
        rather than start without the keys its users were given."""
        path = state_dir / WORKSPACES_FILE
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return cls(path, Kept())
        except OSError as exc:
            raise ValueError(f"cannot read the workspaces in {path}: {exc}") from exc
        with os.fdopen(fd, "rb") as file:
            mode = os.fstat(file.fileno()).st_mode & 0o777
            if mode & 0o077:
                log.warning("%s could be read by others (mode %o): made 0600", path, mode)
                os.fchmod(file.fileno(), FILE_MODE)
            raw = file.read()
        try:
            return cls(path, msgspec.json.decode(raw, type=Kept))
        except msgspec.DecodeError as exc:
            raise ValueError(f"the workspaces in {path} cannot be read: {exc}") from exc

    def workspace_of(self, key: str) -> str | None:
        """The `ws_…` id of the workspace whose key `key` is; None for any other string."""
        if not key.startswith(KEY_PREFIX):
            return None
        found = self._by_digest.get(digest_of(key))
        return found.workspace if found is not None else None

    def holds(self, key_digest: str) -> bool:
        """Whether the key with this digest is still kept (not removed)."""
        return key_digest in self._by_digest

    def workspaces(self) -> list[WorkspaceView]:
        return list(self._kept.workspaces)

    def keys(self, workspace: str | None = None) -> list[KeyView]:
        """Every key (never the key itself), or those of one workspace (a name or an id)."""
        if workspace is None:
            return [_view(key) for key in self._kept.keys]
        chosen = self.named(workspace).id
        return [_view(key) for key in self._kept.keys if key.workspace == chosen]

    def named(self, workspace: str) -> WorkspaceView:
        """The workspace with this name or `ws_…` id."""
        for found in self._kept.workspaces:
            if workspace in (found.id, found.name):
                return found
        raise NotFound(f"no workspace {workspace!r}")

    async def create_workspace(self, name: str) -> WorkspaceView:
        async with self._changing:
            await self.refresh()
            if any(found.name == name for found in self._kept.workspaces):
                raise Denied(f"a workspace named {name!r} exists already", retryable=False)
            made = WorkspaceView(
                id="ws_" + secrets.token_hex(8), name=name, created_at_ms=_now_ms()
            )
            kept = self._kept
            await self._keep(Kept(workspaces=[*kept.workspaces, made], keys=kept.keys))
            return made

    async def create_key(self, workspace: str) -> KeyMade:
        """A new key of the workspace; the answer is the only place it is ever shown."""
        async with self._changing:
            await self.refresh()
            owner = self.named(workspace).id
            key = KEY_PREFIX + secrets.token_urlsafe(32)
            kept_key = KeptKey(
                id="key_" + secrets.token_hex(8),
                workspace=owner,
                sha256=digest_of(key),
                created_at_ms=_now_ms(),
            )
            kept = self._kept
            await self._keep(Kept(workspaces=kept.workspaces, keys=[*kept.keys, kept_key]))
            return KeyMade(
                id=kept_key.id, workspace=owner, created_at_ms=kept_key.created_at_ms, key=key
            )

    async def remove_key(self, key_id: str) -> KeyView:
        async with self._changing:
            await self.refresh()
            if key_id.startswith(KEY_PREFIX):
                raise BadRequest("give the key's id (key_…), not the key")
            removed = [key for key in self._kept.keys if key.id == key_id]
            if not removed:
                raise NotFound(f"no key {key_id!r}")
            left = [key for key in self._kept.keys if key.id != key_id]
            await self._keep(Kept(workspaces=self._kept.workspaces, keys=left))
            return _view(removed[0])

    async def _keep(self, kept: Kept) -> None:
        """Write `kept` to the file (with replicas, the shared document), then make it what
        requests are checked against."""
        if self._shared is not None:
            if not await self._shared.write(self._version, msgspec.json.encode(kept)):
                await self.refresh()
                raise Unavailable(
                    "another holmd changed the workspaces at the same moment; retry",
                    retryable=True,
                )
            self._take(self._version + 1, msgspec.json.encode(kept))
            return
        data = msgspec.json.format(msgspec.json.encode(kept)) + b"\n"
        try:
            await asyncio.to_thread(write_atomic, self.path, data, FILE_MODE)
        except OSError as exc:
            log.exception("keeping the workspaces in %s", self.path)
            raise Unavailable(f"the workspaces could not be kept: {exc}") from exc
        self._kept = kept
        self._by_digest = {key.sha256: key for key in kept.keys}


__all__ = ["KEY_PREFIX", "WORKSPACES_FILE", "Kept", "KeptKey", "Workspaces", "digest_of"]
