"""Content-addressed blobs and per-trace frames on disk.

    <root>/<first 2 hex>/<hex>              a blob: its name is the sha256 of its bytes
    <frames>/<trace>/<frame hash>.png       a frame: its name is the caller's pixel hash

Every write is atomic and durable (a temporary file, fsync, rename, fsync of the folder),
so a reader never meets half a file and a line that names a blob never outlives it in a
crash. Writing what is already there only refreshes its time, which is what age-based
removal looks at. Blocking: call from a thread, never from the event loop.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from collections.abc import Collection, Iterator
from pathlib import Path

from holm.errors import BadRequest

# Trace names and frame hashes become file names: keep them to one harmless component.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:=+-]{0,199}")
_REF = re.compile(r"sha256:([0-9a-f]{64})")
_FRAME_SUFFIX = ".png"


def is_safe_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def check_name(what: str, name: str) -> str:
    if not is_safe_name(name):
        raise BadRequest(f"{what} {name!r} is not a valid name")
    return name


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write `data` at `path` whole or not at all, durably; the file has `mode` from the
    moment it exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    write_durably(tmp, data, os.O_EXCL, mode)
    os.rename(tmp, path)
    fsync_dir(path.parent)


def write_durably(path: Path, data: bytes, flags: int, mode: int = 0o644) -> None:
    """Write `data` to `path` (opened with `flags` besides write and create) and fsync."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, mode)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class BlobStore:
    def __init__(self, root: Path, frames_root: Path) -> None:
        # Nothing is created until something is written: a read-only reader (`holm trace`
        # on a copied state dir) uses this class too.
        self.root = root
        self.frames_root = frames_root

    # Blobs

    def path(self, ref: str) -> Path:
        match = _REF.fullmatch(ref)
        if match is None:
            raise BadRequest(f"{ref!r} is not a blob reference (sha256:<64 hex>)")
        digest = match.group(1)
        return self.root / digest[:2] / digest

    def put(self, data: bytes) -> str:
        ref = "sha256:" + hashlib.sha256(data).hexdigest()
        path = self.path(ref)
        if not _touch(path):
            write_atomic(path, data)
        return ref

    def get(self, ref: str) -> bytes | None:
        try:
            return self.path(ref).read_bytes()
        except (FileNotFoundError, BadRequest):
            return None

    def has(self, ref: str) -> bool:
        try:
            return self.path(ref).is_file()
        except BadRequest:
            return False

    def remove_older_than(self, cutoff_ms: int, keep: Collection[str] = ()) -> int:
        """Remove blobs last written before `cutoff_ms`, except those in `keep`."""
        kept = {ref.removeprefix("sha256:") for ref in keep}
        removed = 0
        for path in _files(self.root):
            if path.name not in kept and _older(path, cutoff_ms) and _unlink(path):
                removed += not path.name.startswith(".")
        return removed

    # Frames

    def frame_path(self, trace: str, frame_hash: str) -> Path:
        check_name("trace", trace)
        check_name("frame hash", frame_hash)
        return self.frames_root / trace / (frame_hash + _FRAME_SUFFIX)

    def put_frame(self, trace: str, frame_hash: str, png: bytes) -> None:
        path = self.frame_path(trace, frame_hash)
        if not _touch(path):
            write_atomic(path, png)

    def get_frame(self, trace: str, frame_hash: str) -> bytes | None:
        if not (is_safe_name(trace) and is_safe_name(frame_hash)):
            return None
        try:
            return self.frame_path(trace, frame_hash).read_bytes()
        except FileNotFoundError:
            return None

    def remove_frames_older_than(self, cutoff_ms: int) -> int:
        removed = 0
        for path in _files(self.frames_root):
            # Leftover temporaries go too, uncounted: only frames are reported.
            if _older(path, cutoff_ms) and _unlink(path) and path.suffix == _FRAME_SUFFIX:
                removed += 1
        return removed

    def remove_frames_of(self, trace: str) -> int:
        folder = self.frames_root / check_name("trace", trace)
        count = sum(1 for path in _files(folder) if path.suffix == _FRAME_SUFFIX)
        shutil.rmtree(folder, ignore_errors=True)
        return count


def _touch(path: Path) -> bool:
    """Refresh the time of an existing file; False when there is none."""
    try:
        os.utime(path)
    except FileNotFoundError:
        return False
    return True


def _older(path: Path, cutoff_ms: int) -> bool:
    try:
        return path.stat().st_mtime_ns < cutoff_ms * 1_000_000
    except FileNotFoundError:
        return False


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def _files(folder: Path) -> Iterator[Path]:
    """Files one or two levels down. A temporary left by a crashed write is among them, so
    that age-based removal takes it too (a write in progress is never old)."""
    if not folder.is_dir():
        return
    for sub in folder.iterdir():
        if sub.is_dir():
            yield from sub.iterdir()
        else:
            yield sub


__all__ = [
    "BlobStore",
    "check_name",
    "fsync_dir",
    "is_safe_name",
    "write_all",
    "write_atomic",
    "write_durably",
]
