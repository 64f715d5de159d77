"""The append-only log: entry kinds, their JSON-lines codec, the stores and the blob store.

open_store(config)      the store `HOLM_STORAGE_BACKEND` names: memory (default) or local
read_trace_file(path)   a trace file read offline, for `holm trace FILE|DIR`

The names below are imported from their modules on first use (PEP 562), so that reading a
trace file offline (`holm trace FILE`, holm.events.trace_file) does not import a store and
asyncio with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, assert_never

if TYPE_CHECKING:
    from holm.config import Config
    from holm.events.local import LocalStore
    from holm.events.memory import MemoryStore
    from holm.events.store import TraceInfo, TraceStore
    from holm.events.trace_file import TraceRead, read_trace_file, trace_files
    from holm.wire.api import PruneReport
    from holm.wire.entries import PAGE_MAX

_HOMES = {
    "LocalStore": "holm.events.local",
    "MemoryStore": "holm.events.memory",
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
    `Unavailable` when another server holds it) and reads its files on first use."""
    from holm.events.local import LocalStore
    from holm.events.memory import MemoryStore

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
        case _:
            assert_never(config.storage_backend)


__all__ = [
    "PAGE_MAX",
    "LocalStore",
    "MemoryStore",
    "PruneReport",
    "TraceInfo",
    "TraceRead",
    "TraceStore",
    "open_store",
    "read_trace_file",
    "trace_files",
]
