"""Browser states kept under a name (`POST …/state/save` with `name`): Playwright storage
states, cookies included, so secrets. They never go in a trace; with the local store they
are files of their own, private to the server, and survive a restart. Each caller has its
own names: a workspace (its `ws_…` id) sees only its own, and the server token its own.

    <state_dir>/browser-states/<ws_… | server>/<name>.json    {"info": …, "session_json": …}

Each is written whole or not at all (`write_atomic`), mode 0600. The memory store keeps them
in memory, for as long as the server runs.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import msgspec

from holm.config import Config
from holm.errors import NotFound
from holm.events.blobs import check_name, write_atomic
from holm.wire.api import SavedState

STATES_DIR = "browser-states"


class _Kept(msgspec.Struct, kw_only=True):
    info: SavedState
    session_json: str


class BrowserStates:
    def __init__(self, root: Path | None) -> None:
        # None: in memory only.
        self.root = root
        self._kept: dict[tuple[str, str], _Kept] = {}

    @classmethod
    def for_config(cls, config: Config) -> BrowserStates:
        durable = config.storage_backend != "memory"
        return cls(config.state_dir / STATES_DIR if durable else None)

    async def save(self, owner: str | None, info: SavedState, session_json: str) -> None:
        kept = _Kept(info=info, session_json=session_json)
        if self.root is None:
            self._kept[_key(owner, info.name)] = kept
            return
        path = self._path(owner, info.name)
        await asyncio.to_thread(write_atomic, path, msgspec.json.encode(kept), 0o600)

    async def load(self, owner: str | None, name: str) -> str:
        if self.root is None:
            kept = self._kept.get(_key(owner, name))
        else:
            kept = await asyncio.to_thread(_read, self._path(owner, name))
        if kept is None:
            raise NotFound(f"no saved browser state {name!r}")
        return kept.session_json

    async def saved(self, owner: str | None) -> list[SavedState]:
        space = _space(owner)
        if self.root is None:
            kept = [k for (o, _), k in self._kept.items() if o == space]
        else:
            kept = await asyncio.to_thread(self._read_all, self.root / space)
        return sorted((k.info for k in kept), key=lambda info: info.name)

    async def remove(self, owner: str | None, name: str) -> bool:
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
