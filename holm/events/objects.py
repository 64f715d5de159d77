"""Where the postgres store keeps its blobs and frames: an object store, written once per
key and read back by key. Two kinds: files in a folder (one host: `HOLM_BLOB_URL` unset or
`file:///path`) and an S3 bucket (`s3://bucket/prefix`, holm/events/s3.py).

    blobs/<2 hex>/<64 hex>          a spilled value, named by the sha256 of its bytes
    frames/<trace>/<frame hash>.png a frame, named by the caller's pixel hash

The same names as the local store's folders (blobs.py), so a folder of either reads the
same. Both keys are content-addressed: a second write of a key holds the same bytes, so
"written once" is safe to retry and needs no compare. The store keeps when each was last
written in PostgreSQL (retention looks there), never in the object's own time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from holm.errors import BadRequest
from holm.events.blobs import check_name, is_safe_name, write_atomic

BLOBS = "blobs"
FRAMES = "frames"


class ObjectStore(Protocol):
    async def put(self, key: str, data: bytes) -> None:
        """Write `data` under `key` unless the key is there already (it then holds the same
        bytes). Durable when it returns. Raises `Unavailable` when the store cannot be
        reached."""
        ...

    async def get(self, key: str) -> bytes | None:
        """The bytes under `key`, None when there are none."""
        ...

    async def delete(self, keys: Iterable[str]) -> None:
        """Remove these keys; a missing one is no error."""
        ...

    async def close(self) -> None: ...


def blob_key(ref: str) -> str:
    digest = ref.removeprefix("sha256:")
    if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
        raise BadRequest(f"{ref!r} is not a blob reference (sha256:<64 hex>)")
    return f"{BLOBS}/{digest[:2]}/{digest}"


def frame_key(trace: str, frame_hash: str) -> str:
    check_name("trace", trace)
    check_name("frame hash", frame_hash)
    return f"{FRAMES}/{trace}/{frame_hash}.png"


def frame_key_or_none(trace: str, frame_hash: str) -> str | None:
    """The key of a frame a reader asks for; None for names that cannot be one."""
    if is_safe_name(trace) and is_safe_name(frame_hash):
        return frame_key(trace, frame_hash)
    return None


class FileObjects:
    """Objects as files under `root`, each written atomically and durably (blobs.py), in
    threads: never on the event loop."""

    def __init__(self, root: Path) -> None:
        self.root = root

    async def put(self, key: str, data: bytes) -> None:
        await asyncio.to_thread(self._put, self.root / key, data)

    async def get(self, key: str) -> bytes | None:
        return await asyncio.to_thread(self._get, self.root / key)

    async def delete(self, keys: Iterable[str]) -> None:
        paths = [self.root / key for key in keys]
        if paths:
            await asyncio.to_thread(self._delete, paths)

    async def close(self) -> None:
        pass

    @staticmethod
    def _put(path: Path, data: bytes) -> None:
        if not path.exists():
            write_atomic(path, data)

    @staticmethod
    def _get(path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None

    @staticmethod
    def _delete(paths: list[Path]) -> None:
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


__all__ = [
    "BLOBS",
    "FRAMES",
    "FileObjects",
    "ObjectStore",
    "blob_key",
    "frame_key",
    "frame_key_or_none",
]
