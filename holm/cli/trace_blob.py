"""`holm trace blob REF [DIR]`: the bytes of what a trace line names, from a state dir, as
stored: a blob (`sha256:…`), a value too big for its trace line (its JSON, docs/storage.md)
that the line names by reference (`{"__blob": "sha256:…", …}`); or a frame (`px:…`), the PNG
a `frame` entry names by its pixel hash, kept under `frames/<trace>/`."""

from __future__ import annotations

from pathlib import Path

from holm.errors import NotFound
from holm.events.blobs import BlobStore, check_name
from holm.events.trace_file import BLOBS_DIR, FRAMES_DIR, traces_folder

# How a frame's pixel hash begins (holm/agent's frames); a blob's is `sha256:`.
FRAME_PREFIX = "px:"


def read_blob(state_dir: Path, ref: str) -> bytes:
    """The blob or frame `ref` names, from the state dir `state_dir` (or the state dir of
    the trace folder it is). BadRequest for anything but `sha256:<64 hex>` or a frame hash
    that is one harmless file name, so that a reference never names a file outside the
    blobs and frames; NotFound when there is no such blob or frame."""
    root = traces_folder(state_dir).parent
    if ref.startswith(FRAME_PREFIX):
        # A state dir keeps frames beside its traces/; a folder of .jsonl files (as
        # fixtures/traces/recorded/ is) in its own frames/.
        folders = [root / FRAMES_DIR, state_dir / FRAMES_DIR]
        return _read_frame(folders, check_name("frame hash", ref))
    # Only reads: the store creates nothing until it writes.
    path = BlobStore(root / BLOBS_DIR, root / FRAMES_DIR).path(ref)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise NotFound(f"no blob {ref} in {root / BLOBS_DIR}") from None


def _read_frame(folders: list[Path], frame_hash: str) -> bytes:
    """A frame is kept once per trace that saw it, all copies the same pixels: any will do."""
    for folder in folders:
        for path in sorted(folder.glob(f"*/{frame_hash}.png")):
            return path.read_bytes()
    raise NotFound(f"no frame {frame_hash} in {folders[0]}")


__all__ = ["FRAME_PREFIX", "read_blob"]
