"""A trace from a `.holm` file (holm/wire/archive.py) taken into this server's store under a
new ID, so that it can be read, viewed, diffed and forked here as if its box had run here
and been removed (docs/trace.md).

The new trace is `box_created` (the new ID, the source's spec, its placement on a runtime
this server has), `imported` (where it came from), then the file's entries but its own start
(`box_created`, `forked_from`: it was created, or forked from a box, elsewhere), and, unless
it ends removed already, `gone`: no box of it runs here. The entries keep their times and
actors, so a fork paces its steps as the source did; the store numbers them anew. The frames
are stored before the entries that name them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from holm.errors import BadRequest
from holm.events.codec import CorruptLine, decode_line
from holm.projections.box_state import fold_known
from holm.wire.archive import Archive
from holm.wire.entries import (
    Adopted,
    BoxCreated,
    BoxGone,
    Entry,
    ForkedFrom,
    ImageBuilt,
    ImageRemoved,
    Imported,
)
from holm.wire.spec import Placement, spec_digest

from .journal import entry, now_ms

if TYPE_CHECKING:
    from .engine import Engine

GONE_REASON = "imported: its box ran where the trace was exported"


async def import_trace(engine: Engine, archive: Archive, owner: str | None) -> str:
    """Store the archive's trace under a new box ID, owned by `owner`; that ID."""
    from .engine import new_box_id

    entries = _entries_of(archive)
    first = entries[0]
    created = _created(engine, entries, new_box_id(), owner)
    imported = Imported(
        seq=0,
        at_ms=first.at_ms,
        actor="agent",
        source=archive.manifest.trace,
        entries=len(entries),
        exported_at_ms=archive.manifest.exported_at_ms,
        imported_at_ms=now_ms(),
    )
    body = [e for e in entries if not isinstance(e, BoxCreated | ForkedFrom)]
    trace: list[Entry] = [created, imported, *body]
    state, _ = fold_known(trace)
    if state is None or not state.removed:
        trace.append(entry(BoxGone, "system", reason=GONE_REASON))
    for frame_hash, png in archive.frames.items():
        await engine.store.put_frame(created.box_id, frame_hash, png)
    await engine.journal.append(created.box_id, trace)
    return created.box_id


def _entries_of(archive: Archive) -> list[Entry]:
    try:
        entries = [decode_line(line, archive) for line in archive.lines]
    except (CorruptLine, msgspec.MsgspecError, ValueError) as exc:
        raise BadRequest(f"the file's trace is not a box's trace: {exc}") from exc
    if not entries:
        raise BadRequest("the file's trace has no entries")
    if any(isinstance(e, ImageBuilt | ImageRemoved) for e in entries):
        raise BadRequest("the file holds the server's own trace, not a box's")
    return entries


def _created(engine: Engine, entries: list[Entry], box_id: str, owner: str | None) -> BoxCreated:
    """The new trace's start: the source's spec and placement, on the source's runtime when
    this server has it, else on its default runtime."""
    origin = next((e for e in entries if isinstance(e, BoxCreated | Adopted)), None)
    spec = origin.spec if origin is not None else None
    if origin is None or spec is None:
        raise BadRequest("the file's trace has no box_created (nor an adoption with a spec)")
    runtime = origin.runtime if origin.runtime in engine.runtimes else None
    runtime = runtime or engine.config.default_runtime
    placement = msgspec.structs.replace(origin.placement or Placement(), runtime=runtime)
    expires = origin.expires_at_ms if origin.expires_at_ms is not None else entries[0].at_ms
    return BoxCreated(
        seq=0,
        at_ms=entries[0].at_ms,
        actor="agent",
        box_id=box_id,
        runtime=runtime,
        spec=spec,
        placement=placement,
        spec_digest=spec_digest(spec),
        expires_at_ms=expires,
        owner=owner,
    )


__all__ = ["GONE_REASON", "import_trace"]
