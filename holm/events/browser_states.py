"""Browser states kept under a name (`POST …/state/save` with `name`): Playwright storage
states, cookies included, so secrets. They never go in a trace; with the local store they
are files of their own, private to the server, and survive a restart. Each caller has its
own names: a workspace (its `ws_…` id) sees only its own, and the server token its own.

    <state_dir>/browser-states/<ws_… | server>/<name>.json    {"info": …, "session_json": …}

Each is written whole or not at all (`write_atomic`), mode 0600. The memory store keeps them
in memory, for as long as the server runs. With replicas (the postgres store, several
holmd: docs/scale.md) they are rows of `holm_browser_states` instead (`share`), so that a
state saved through one holmd loads through any; each row's cookies and storage are sealed
under `HOLM_SECRETS_KEY` (holm/secrets_box.py, bound to the row's caller and name), which
every holmd of one database has.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from holm.config import Config
from holm.errors import Internal, NotFound
from holm.events.blobs import check_name, write_atomic
from holm.secrets_box import SecretsKeyError
from holm.wire.api import SavedState

if TYPE_CHECKING:
    from holm.events.postgres import PostgresStore
    from holm.secrets_box import SecretsBox

STATES_DIR = "browser-states"


class _Kept(msgspec.Struct, kw_only=True):
    info: SavedState
    session_json: str


class BrowserStates:
    def __init__(self, root: Path | None) -> None:
        # None: in memory only.
        self.root = root
        self._kept: dict[tuple[str, str], _Kept] = {}
        self._shared: _SharedStates | None = None

    def share(self, store: PostgresStore, sealer: SecretsBox) -> None:
        """With replicas: keep the states in the database, sealed with `sealer`."""
        self._shared = _SharedStates(store, sealer)

    @classmethod
    def for_config(cls, config: Config) -> BrowserStates:
        durable = config.storage_backend != "memory"
        return cls(config.state_dir / STATES_DIR if durable else None)

    async def save(self, owner: str | None, info: SavedState, session_json: str) -> None:
        kept = _Kept(info=info, session_json=session_json)
        if self._shared is not None:
            await self._shared.save(_key(owner, info.name), kept)
            return
        if self.root is None:
            self._kept[_key(owner, info.name)] = kept
            return
        path = self._path(owner, info.name)
        await asyncio.to_thread(write_atomic, path, msgspec.json.encode(kept), 0o600)

    async def load(self, owner: str | None, name: str) -> str:
        if self._shared is not None:
            found = await self._shared.load(_key(owner, name))
            if found is None:
                raise NotFound(f"no saved browser state {name!r}")
            return found
        if self.root is None:
            kept = self._kept.get(_key(owner, name))
        else:
            kept = await asyncio.to_thread(_read, self._path(owner, name))
        if kept is None:
            raise NotFound(f"no saved browser state {name!r}")
        return kept.session_json

    async def saved(self, owner: str | None) -> list[SavedState]:
        space = _space(owner)
        if self._shared is not None:
            return await self._shared.saved(space)
        if self.root is None:
            kept = [k for (o, _), k in self._kept.items() if o == space]
        else:
            kept = await asyncio.to_thread(self._read_all, self.root / space)
        return sorted((k.info for k in kept), key=lambda info: info.name)

    async def remove(self, owner: str | None, name: str) -> bool:
        if self._shared is not None:
            return await self._shared.remove(_key(owner, name))
        if self.root is None:
            return self._kept.pop(_key(owner, name), None) is not None
        try:
            await asyncio.to_thread(self._path(owner, name).unlink)
        except FileNotFoundError:
            return False
        return True

    def _path(self, owner: str | None, name: str) -> Path:
        assert self.root is not None
        space, name = _key(owner, name)
        return self.root / space / f"{name}.json"

    @staticmethod
    def _read_all(root: Path) -> list[_Kept]:
        if not root.is_dir():
            return []
        found = (_read(path) for path in root.glob("*.json"))
        return [kept for kept in found if kept is not None]


_info = msgspec.json.Decoder(SavedState)


class _SharedStates:
    """The states as rows of the postgres store, their session sealed."""

    def __init__(self, store: PostgresStore, sealer: SecretsBox) -> None:
        self.store = store
        self.sealer = sealer

    @staticmethod
    def _aad(key: tuple[str, str]) -> bytes:
        return f"browser-state\0{key[0]}\0{key[1]}".encode()

    async def save(self, key: tuple[str, str], kept: _Kept) -> None:
        sealed = self.sealer.seal(kept.session_json.encode(), self._aad(key))
        await self.store.query(
            "keep a browser state",
            "INSERT INTO holm_browser_states (space, name, info, sealed) VALUES ($1, $2, $3, $4)"
            " ON CONFLICT (space, name) DO UPDATE SET info = EXCLUDED.info,"
            " sealed = EXCLUDED.sealed",
            key[0],
            key[1],
            msgspec.json.encode(kept.info).decode(),
            sealed,
        )

    async def load(self, key: tuple[str, str]) -> str | None:
        rows = await self.store.query(
            "read a browser state",
            "SELECT sealed FROM holm_browser_states WHERE space = $1 AND name = $2",
            key[0],
            key[1],
        )
        if not rows:
            return None
        try:
            return self.sealer.open(bytes(rows[0]["sealed"]), self._aad(key)).decode()
        except SecretsKeyError as exc:
            # Sealed by a holmd with another HOLM_SECRETS_KEY: a setting to fix, said so.
            raise Internal(str(exc)) from None

    async def saved(self, space: str) -> list[SavedState]:
        rows = await self.store.query(
            "list browser states",
            "SELECT info FROM holm_browser_states WHERE space = $1 ORDER BY name",
            space,
        )
        return [_info.decode(row["info"]) for row in rows]

    async def remove(self, key: tuple[str, str]) -> bool:
        rows = await self.store.query(
            "remove a browser state",
            "DELETE FROM holm_browser_states WHERE space = $1 AND name = $2 RETURNING name",
            key[0],
            key[1],
        )
        return bool(rows)


def _space(owner: str | None) -> str:
    """The caller's folder: its workspace, or the server's; one harmless file name."""
    return check_name("workspace", owner or "server")


def _key(owner: str | None, name: str) -> tuple[str, str]:
    return _space(owner), check_name("state", name)


def _read(path: Path) -> _Kept | None:
    """The state kept in `path`; None when there is none (or only a damaged file, which a
    crash cannot leave, since each is written whole)."""
    with contextlib.suppress(FileNotFoundError, msgspec.DecodeError, msgspec.ValidationError):
        return msgspec.json.decode(path.read_bytes(), type=_Kept)
    return None
