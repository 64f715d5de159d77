"""`holm trace blob sha256:… [DIR]`: the bytes of a blob of a state dir, as stored: a value
too big for its trace line (its JSON, docs/storage.md), which the line names by reference
(`{"__blob": "sha256:…", …}`)."""

from __future__ import annotations

from pathlib import Path

from holm.errors import NotFound
from holm.events.blobs import BlobStore
from holm.events.trace_file import BLOBS_DIR, FRAMES_DIR, traces_folder


def read_blob(state_dir: Path, ref: str) -> bytes:
    """The blob `ref` names, from the state dir `state_dir` (or the state dir of the trace
    folder it is). BadRequest for anything but `sha256:<64 hex>`, so that a reference never
    names a file outside the blobs; NotFound when there is no such blob."""
    root = traces_folder(state_dir).parent
    # Only reads: the store creates nothing until it writes.
    path = BlobStore(root / BLOBS_DIR, root / FRAMES_DIR).path(ref)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise NotFound(f"no blob {ref} in {root / BLOBS_DIR}") from None


__all__ = ["read_blob"]
