"""The append-only log: entry kinds, their JSON-lines codec, the stores and the blob store.

open_store(config)      the store `HOLM_STORAGE_BACKEND` names: memory (default) or local
read_trace_file(path)   a trace file read offline, for `holm trace FILE|DIR`
"""

from __future__ import annotations

from typing import assert_never

from holm.config import Config
from holm.events.local import LocalStore, TraceRead, read_trace_file, trace_files
from holm.events.memory import MemoryStore
from holm.events.store import TraceInfo, TraceStore
from holm.wire.api import PruneReport
from holm.wire.entries import PAGE_MAX


def open_store(config: Config) -> TraceStore:
    """The configured store. The local one takes the state dir's lock here (refused with
    `Unavailable` when another server holds it) and reads its files on first use."""
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
