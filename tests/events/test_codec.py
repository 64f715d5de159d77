"""The line format: what a line holds, spilled values, and old lines read through the
upgrade hook without the file changing."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from holm.events import LocalStore, read_trace_file
from holm.events.codec import (
    SPILL_BYTES,
    UPGRADES,
    CorruptLine,
    decode_line,
    decode_lines,
    encode_entry,
)
from holm.wire.entries import BoxGone

from .conftest import acted, clicked, created, executed


class Blobs:
    """An in-memory blob sink and source."""

    def __init__(self) -> None:
        self.kept: dict[str, bytes] = {}

    def put(self, data: bytes) -> str:
        ref = "sha256:" + hashlib.sha256(data).hexdigest()
        self.kept[ref] = data
        return ref

    def get(self, ref: str) -> bytes | None:
        return self.kept.get(ref)


def test_a_line_is_one_json_object_with_the_envelope_first() -> None:
    line = encode_entry(created())
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert list(json.loads(line))[:4] == ["kind", "seq", "at_ms", "actor"]
    assert decode_line(line) == created()


def test_a_spilled_line_keeps_the_envelope_and_small_fields() -> None:
    blobs = Blobs()
    big = {"rows": ["r" * SPILL_BYTES, "s" * 10], "n": 3}
    line = encode_entry(acted(text="short", result=big), blobs)

    tree = json.loads(line)
    assert len(line) < 1_000
    assert (tree["kind"], tree["action"]["text"], tree["result"]["n"]) == ("acted", "short", 3)
    assert tree["result"]["rows"][1] == "s" * 10
    ref = tree["result"]["rows"][0]["__blob"]
    assert json.loads(blobs.kept[ref]) == "r" * SPILL_BYTES
    assert decode_line(line, blobs) == acted(text="short", result=big)


def test_a_blob_reference_carries_its_size_and_mime_and_an_old_one_still_resolves() -> None:
    blobs = Blobs()
    line = encode_entry(executed(stdout="e" * (SPILL_BYTES + 1)), blobs)
    reference = json.loads(line)["stdout"]
    ref = reference["__blob"]
    assert reference == {
        "__blob": ref,
        "bytes": len(blobs.kept[ref]),
        "mime": "application/json",
    }
    # A line written before `mime` was added.
    old = json.dumps({**json.loads(line), "stdout": {"__blob": ref, "bytes": 9}}).encode()
    assert decode_line(old, blobs) == executed(stdout="e" * (SPILL_BYTES + 1))


def test_a_page_decodes_the_same_in_one_pass_as_line_by_line() -> None:
    blobs = Blobs()
    entries = [clicked(x) for x in range(50)] + [executed(stdout="e" * (SPILL_BYTES + 1))]
    chunk = b"".join(encode_entry(entry, blobs) for entry in entries)

    assert decode_lines(chunk, blobs) == entries
    assert decode_lines(chunk[: chunk.index(b"\n") + 1]) == entries[:1]
    assert decode_lines(b"") == []


def test_a_line_that_is_not_an_entry_is_corrupt() -> None:
    for line in (b'{"kind":"box_paused","seq":0', b"[1,2]", b'{"kind":"nope","seq":0}'):
        with pytest.raises(CorruptLine):
            decode_line(line)


@pytest.fixture
def gone_used_to_say_why() -> Iterator[None]:
    """As if `gone` once wrote `why` where it now writes `reason`."""

    def upgrade(tree: dict[str, Any]) -> dict[str, Any]:
        tree = dict(tree)
        tree.setdefault("reason", tree.pop("why", ""))
        return tree

    UPGRADES["gone"] = [upgrade]
    yield
    del UPGRADES["gone"]


async def test_an_old_line_is_upgraded_on_read_and_never_rewritten(
    tmp_path: Path, gone_used_to_say_why: None
) -> None:
    store = LocalStore(tmp_path)
    await store.append("box_1", [created()])
    await store.close()
    path = tmp_path / "traces" / "box_1.jsonl"
    with path.open("ab") as file:
        file.write(b'{"kind":"gone","seq":1,"at_ms":9,"actor":"system","why":"expired"}\n')
    before = path.read_bytes()

    store = LocalStore(tmp_path)
    try:
        (old,) = await store.read("box_1", after=0)
        appended = await store.append("box_1", [clicked(1)])
    finally:
        await store.close()

    assert old == BoxGone(seq=1, at_ms=9, actor="system", reason="expired")
    assert read_trace_file(path, after=0, limit=1).entries == [old]
    assert [entry.seq for entry in appended] == [2]
    assert path.read_bytes().startswith(before)
