"""Entries to JSON lines and back.

One entry is one line of JSON (no newline inside; `jq` reads a trace file as it is). A value
inside an entry whose JSON is over `SPILL_BYTES` is written to the blob store and replaced
on the line by `{"__blob": "sha256:<hex>", "bytes": N, "mime": "application/json"}`; the blob
holds that value's JSON (hence its `mime`), so that `jq . <blob>` shows it. References
written before `mime` was added have none, and resolve the same. Reading resolves the
references, so a reader sees the full value. The envelope (`kind`, `seq`, `at_ms`,
`actor`) is never spilled.

Lines written by an older holm are upgraded here while decoding (see `UPGRADES`), never
rewritten on disk.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Protocol

import msgspec

from holm.wire.entries import Entry

SPILL_BYTES = 64 * 1024
BLOB_KEY = "__blob"
# What a blob holds: the spilled value's JSON.
BLOB_MIME = "application/json"

_BLOB_MARK = b'"' + BLOB_KEY.encode() + b'"'
_ENVELOPE = frozenset({"kind", "seq", "at_ms", "actor"})

_encoder = msgspec.json.Encoder()
_entry_decoder = msgspec.json.Decoder(Entry)
_page_decoder = msgspec.json.Decoder(list[Entry])
_tree_decoder = msgspec.json.Decoder()

Tree = dict[str, Any]

# kind -> functions that turn an older line (as a dict) into the current shape, in order.
# Empty while no written field has changed; a change adds its function here, never a
# rewrite of the files.
UPGRADES: dict[str, list[Callable[[Tree], Tree]]] = {}


class CorruptLine(ValueError):
    """A line that is not an entry of any known shape."""


class BlobSink(Protocol):
    def put(self, data: bytes) -> str: ...


class BlobSource(Protocol):
    def get(self, ref: str) -> bytes | None: ...


def encode_entry(entry: Entry, blobs: BlobSink | None = None) -> bytes:
    """The entry as one line with its newline. Without `blobs` nothing is spilled."""
    line = _encoder.encode(entry)
    if blobs is None or (len(line) <= SPILL_BYTES and _BLOB_MARK not in line):
        return line + b"\n"
    tree: Tree = msgspec.to_builtins(entry)
    return _encoder.encode(_spill_fields(tree, blobs)) + b"\n"


def needs_spill(line: bytes) -> bool:
    """Whether a line encoded without a blob store must be encoded again with one: it is
    too long, or it holds a user value that would read back as a blob reference."""
    return len(line) > SPILL_BYTES + 1 or _BLOB_MARK in line


def decode_line(line: bytes, blobs: BlobSource | None = None) -> Entry:
    """One line (with or without its newline) to its entry, blobs resolved when `blobs`
    has them; a missing blob stays as its reference."""
    if _BLOB_MARK not in line:
        try:
            return _entry_decoder.decode(line)
        except msgspec.ValidationError:
            pass  # an older shape, upgraded below
        except msgspec.DecodeError as exc:
            raise CorruptLine(str(exc)) from exc
    return _decode_tree(line, blobs)


def decode_lines(chunk: bytes, blobs: BlobSource | None = None) -> list[Entry]:
    """Every line of a chunk of whole lines, in order. A chunk with no blob reference and
    no older line is decoded in one pass, which is what makes a page read cheap."""
    if not chunk:
        return []
    if _BLOB_MARK not in chunk:
        try:
            return _page_decoder.decode(b"[" + chunk.rstrip(b"\n").replace(b"\n", b",") + b"]")
        except msgspec.MsgspecError:
            pass  # find the line that needs more than the fast path, below
    return [decode_line(line, blobs) for line in chunk.rstrip(b"\n").split(b"\n")]


def blob_refs(line: bytes) -> list[str]:
    """The blobs a written line refers to."""
    if _BLOB_MARK not in line:
        return []
    refs: list[str] = []
    _collect_refs(_tree_decoder.decode(line), refs)
    return refs


def _collect_refs(value: Any, refs: list[str]) -> None:
    if _is_reference(value):
        refs.append(value[BLOB_KEY])
    elif isinstance(value, dict):
        for item in value.values():
            _collect_refs(item, refs)
    elif isinstance(value, list):
        for item in value:
            _collect_refs(item, refs)


class Envelope(msgspec.Struct):
    """What every line has, whatever its kind: enough to check framing and order."""

    seq: int
    at_ms: int


_envelope_decoder = msgspec.json.Decoder(Envelope)


def read_envelope(line: bytes) -> Envelope | None:
    """The envelope of a line that is a whole JSON object with one, else None. A line of a
    kind this holm does not know still has one: it was written by a newer holm, not torn."""
    try:
        return _envelope_decoder.decode(line)
    except msgspec.MsgspecError:
        return None


def _decode_tree(line: bytes, blobs: BlobSource | None) -> Entry:
    try:
        tree = _tree_decoder.decode(line)
    except msgspec.DecodeError as exc:
        raise CorruptLine(str(exc)) from exc
    if not isinstance(tree, dict):
        raise CorruptLine("a trace line must be a JSON object")
    resolved = _resolve(tree, blobs)
    for upgrade in UPGRADES.get(str(resolved.get("kind")), ()):
        resolved = upgrade(resolved)
    try:
        entry: Entry = msgspec.convert(resolved, Entry)
    except msgspec.ValidationError as exc:
        raise CorruptLine(str(exc)) from exc
    return entry


def _spill_fields(tree: Tree, blobs: BlobSink) -> Tree:
    spills: list[bytes] = []
    spilled = {
        key: value if key in _ENVELOPE else _spill(value, spills) for key, value in tree.items()
    }
    for data in spills:
        blobs.put(data)
    return spilled


def _spill(value: Any, spills: list[bytes]) -> Any:
    """Replace the parts of `value` over the limit by blob references, the innermost
    first, so that the small fields beside a big one stay on the line for `jq`. What goes
    to blobs is added to `spills`. A blob always holds a value as written by its user, never
    a reference: a reader resolves one level only."""
    encoded = _encoder.encode(value)
    if isinstance(value, dict) and BLOB_KEY in value:
        # A user value shaped like a reference: kept in a blob, so that it reads back as
        # itself (a resolved blob is not resolved again).
        return _reference(spills, encoded)
    if len(encoded) <= SPILL_BYTES and _BLOB_MARK not in encoded:
        return value
    if isinstance(value, dict | list):
        mark = len(spills)
        inner = (
            {key: _spill(item, spills) for key, item in value.items()}
            if isinstance(value, dict)
            else [_spill(item, spills) for item in value]
        )
        if len(_encoder.encode(inner)) <= SPILL_BYTES:
            return inner
        del spills[mark:]  # still too big: the whole value goes to one blob instead
    return _reference(spills, encoded)


def _reference(spills: list[bytes], encoded: bytes) -> Tree:
    spills.append(encoded)
    return {
        BLOB_KEY: "sha256:" + hashlib.sha256(encoded).hexdigest(),
        "bytes": len(encoded),
        "mime": BLOB_MIME,
    }


def _is_reference(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get(BLOB_KEY), str)


def _resolve(value: Any, blobs: BlobSource | None) -> Any:
    if _is_reference(value):
        data = None if blobs is None else blobs.get(value[BLOB_KEY])
        return value if data is None else _tree_decoder.decode(data)
    if isinstance(value, dict):
        return {key: _resolve(item, blobs) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, blobs) for item in value]
    return value


__all__ = [
    "BLOB_KEY",
    "BLOB_MIME",
    "SPILL_BYTES",
    "UPGRADES",
    "BlobSink",
    "BlobSource",
    "CorruptLine",
    "Envelope",
    "blob_refs",
    "decode_line",
    "decode_lines",
    "encode_entry",
    "needs_spill",
    "read_envelope",
]
