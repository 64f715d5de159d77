"""A trace as one file (`.holm`, docs/trace.md): a zip of the trace's JSON lines, exactly the
frames and blobs they name, and a manifest that lists them. `holm trace export` writes one,
`POST /v1/traces` (`holm trace import`) reads one; both sides speak this module.

    manifest.json          {"format": "holm-trace", "version": 1, "trace", "entries",
                            "frames": [hash, …], "blobs": [sha256:…, …], "exported_at_ms"}
    trace.jsonl            the entries, one a line (values over a line's size may be blob
                           references, `{"__blob": "sha256:…"}`, as a state dir keeps them)
    frames/<hash>.png      each frame a `frame` entry names
    blobs/<hex>            each blob a line names (its JSON)

Reading checks what a file from anywhere may hold: only those names, each listed in the
manifest and each listed one present, a frame hash that is one plain file name, a blob whose
bytes hash to its name, and at most `MAX_BYTES` in all once unpacked.
"""

from __future__ import annotations

import hashlib
import io
import re
import zipfile
from typing import Literal

import msgspec

from holm.errors import BadRequest

FORMAT: Literal["holm-trace"] = "holm-trace"
VERSION = 1
MANIFEST = "manifest.json"
TRACE = "trace.jsonl"
MIME = "application/zip"
# What one file may hold unpacked, and how many files: a zip that says more is refused
# before it is inflated.
MAX_BYTES = 1024 * 1024 * 1024
MAX_FILES = 100_000

_FRAME = re.compile(r"frames/([A-Za-z0-9][A-Za-z0-9_.:=+-]{0,199})\.png")
_BLOB = re.compile(r"blobs/([0-9a-f]{64})")


class Manifest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    format: Literal["holm-trace"] = FORMAT
    version: int = VERSION
    # The trace's name where it was exported from (its box ID).
    trace: str
    entries: int
    frames: list[str]
    blobs: list[str]
    exported_at_ms: int
    # Frames a `frame` entry names that the exporter no longer had (pruned by age).
    missing_frames: list[str] = msgspec.field(default_factory=list)


class Archive(msgspec.Struct, kw_only=True):
    manifest: Manifest
    # The trace's lines, each a whole JSON line without its newline.
    lines: list[bytes]
    frames: dict[str, bytes]
    blobs: dict[str, bytes]

    def get(self, ref: str) -> bytes | None:
        """A blob by its reference: an archive is the blob source of its own lines."""
        return self.blobs.get(ref)


def pack(archive: Archive) -> bytes:
    """The archive as the bytes of a `.holm` file."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr(MANIFEST, msgspec.json.encode(archive.manifest))
        zipped.writestr(TRACE, b"".join(line + b"\n" for line in archive.lines))
        for frame_hash, png in sorted(archive.frames.items()):
            # PNG is compressed already.
            zipped.writestr(f"frames/{frame_hash}.png", png, compress_type=zipfile.ZIP_STORED)
        for ref, data in sorted(archive.blobs.items()):
            zipped.writestr(f"blobs/{ref.removeprefix('sha256:')}", data)
    return out.getvalue()


def unpack(data: bytes) -> Archive:
    """A `.holm` file's archive; BadRequest naming what is wrong with one that is not."""
    try:
        zipped = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise BadRequest(f"not a .holm file (a zip): {exc}") from exc
    with zipped:
        infos = zipped.infolist()
        if len(infos) > MAX_FILES or sum(info.file_size for info in infos) > MAX_BYTES:
            raise BadRequest(f"a .holm file holds at most {MAX_FILES} files, {MAX_BYTES} bytes")
        names = {info.filename for info in infos}
        if MANIFEST not in names or TRACE not in names:
            raise BadRequest(f"a .holm file has {MANIFEST} and {TRACE}")
        try:
            manifest = msgspec.json.decode(zipped.read(MANIFEST), type=Manifest)
        except msgspec.MsgspecError as exc:
            raise BadRequest(f"{MANIFEST}: {exc}") from exc
        if manifest.version != VERSION:
            raise BadRequest(f"{MANIFEST}: version {manifest.version}; this holm reads {VERSION}")
        frames: dict[str, bytes] = {}
        blobs: dict[str, bytes] = {}
        for name in sorted(names - {MANIFEST, TRACE}):
            if (frame := _FRAME.fullmatch(name)) is not None:
                frames[frame.group(1)] = zipped.read(name)
            elif (blob := _BLOB.fullmatch(name)) is not None:
                blobs["sha256:" + blob.group(1)] = _checked_blob(blob.group(1), zipped.read(name))
            else:
                raise BadRequest(f"a .holm file holds no {name!r}")
        if sorted(frames) != sorted(manifest.frames) or sorted(blobs) != sorted(manifest.blobs):
            raise BadRequest(f"the frames and blobs of the file are not those {MANIFEST} lists")
        lines = [line for line in zipped.read(TRACE).split(b"\n") if line]
    if len(lines) != manifest.entries:
        raise BadRequest(f"{TRACE} has {len(lines)} lines, {MANIFEST} says {manifest.entries}")
    return Archive(manifest=manifest, lines=lines, frames=frames, blobs=blobs)


def _checked_blob(digest: str, data: bytes) -> bytes:
    if hashlib.sha256(data).hexdigest() != digest:
        raise BadRequest(f"blob {digest} does not hold the bytes its name is the hash of")
    return data


__all__ = ["FORMAT", "MAX_BYTES", "MIME", "VERSION", "Archive", "Manifest", "pack", "unpack"]
