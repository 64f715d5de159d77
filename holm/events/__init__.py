"""The append-only log: entry kinds, their JSON-lines codec, the stores and the blob store.

open_store(config)      the store `HOLM_STORAGE_BACKEND` names: memory (default), local or
                        postgres (with its blobs where `HOLM_BLOB_URL` says)
read_trace_file(path)   a trace file read offline, for `holm trace FILE|DIR`

The names below are imported from their modules on first use (PEP 562), so that reading a
trace file offline (`holm trace FILE`, holm.events.trace_file) does not import a store and
asyncio with it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, assert_never

if TYPE_CHECKING:
    from holm.config import Config
    from holm.events.local import LocalStore
    from holm.events.memory import MemoryStore
    from holm.events.postgres import PostgresStore
    from holm.events.store import TraceInfo, TraceStore
    from holm.events.trace_file import TraceRead, read_trace_file, trace_files
    from holm.wire.api import PruneReport
    from holm.wire.entries import PAGE_MAX

_HOMES = {
    "LocalStore": "holm.events.local",
    "MemoryStore": "holm.events.memory",
    "PostgresStore": "holm.events.postgres",
    "TraceInfo": "holm.events.store",
    "TraceStore": "holm.events.store",
    "TraceRead": "holm.events.trace_file",
    "read_trace_file": "holm.events.trace_file",
    "trace_files": "holm.events.trace_file",
    "PruneReport": "holm.wire.api",
    "PAGE_MAX": "holm.wire.entries",
}


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)


def open_store(config: Config) -> TraceStore:
    """The configured store. The local one takes the state dir's lock here (refused with
    `Unavailable` when another server holds it) and reads its files on first use; the
    postgres one connects, and makes or migrates its tables, on first use. A setting that
    does not fit the backend raises `ValueError`."""
    from holm.events.local import LocalStore
    from holm.events.memory import MemoryStore

    if config.blob_url is not None and config.storage_backend != "postgres":
        raise ValueError(
            "bad setting: HOLM_BLOB_URL is for HOLM_STORAGE_BACKEND=postgres; the local store"
            " keeps its blobs and frames in HOLM_STATE_DIR"
        )
    match config.storage_backend:
        case "memory":
            return MemoryStore(
                keep_frames_secs=config.keep_frames_secs,
                keep_entries_secs=config.keep_entries_secs,
            )
        case "local":
            return LocalStore(
                config.state_dir,
                keep_frames_secs=config.keep_frames_secs,
                keep_entries_secs=config.keep_entries_secs,
            )
        case "postgres":
            return _postgres_store(config)
        case _:
            assert_never(config.storage_backend)


def _postgres_store(config: Config) -> TraceStore:
    from urllib.parse import urlsplit

    from holm.events.objects import FileObjects, ObjectStore
    from holm.events.postgres import PostgresStore

    if not config.database_url:
        raise ValueError("bad setting: HOLM_STORAGE_BACKEND=postgres needs HOLM_DATABASE_URL")
    objects: ObjectStore
    url = config.blob_url
    if url is None:
        objects = FileObjects(config.state_dir)
    elif url.startswith("file://"):
        objects = FileObjects(Path(urlsplit(url).path))
    elif url.startswith("s3://"):
        from holm.events.s3 import S3Objects

        objects = S3Objects(url, endpoint=config.s3_endpoint, region=config.s3_region)
    else:
        raise ValueError(f"bad setting: HOLM_BLOB_URL {url!r} is not s3://… or file://…")
    return PostgresStore(
        config.database_url,
        objects,
        keep_frames_secs=config.keep_frames_secs,
        keep_entries_secs=config.keep_entries_secs,
    )


__all__ = [
    "PAGE_MAX",
    "LocalStore",
    "MemoryStore",
    "PostgresStore",
    "PruneReport",
    "TraceInfo",
    "TraceRead",
    "TraceStore",
    "open_store",
    "read_trace_file",
    "trace_files",
]
