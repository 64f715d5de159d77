"""`holm trace ls`: one line per trace, with the box it records (its runtime, state and
origin: a fork of another box, or adopted by a server after a restart), read from the files
of a state dir or from a server (`GET /v1/traces`). Both give each trace the same way: the
store's figures and the box projection of its entries (holm/projections/views.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from holm.cli.boxes import fork_text, state_text
from holm.cli.output import compact_json, print_table, when
from holm.cli.remote import Remote
from holm.events.trace_file import read_trace_file, trace_files
from holm.projections.box_state import fold_known
from holm.projections.views import trace_view
from holm.wire.api import TraceView
from holm.wire.entries import SERVER_TRACE

COLUMNS = ("TRACE", "RUNTIME", "FIRST", "LAST", "ENTRIES", "FRAMES", "STATE", "ORIGIN")


def local_traces(folder: Path) -> list[TraceView]:
    """The traces of a state dir (its `traces/`) or of a folder of `.jsonl` files."""
    views = []
    for path in trace_files(folder):
        read = read_trace_file(path)
        # The server's own trace records no box, as the server's journal has it.
        box = None if path.stem == SERVER_TRACE else fold_known(read.entries)[0]
        views.append(trace_view(read.info(path.stem), box))
    return views


def server_traces(remote: Remote) -> list[TraceView]:
    return remote.client.traces()


def print_traces(views: Sequence[TraceView], as_json: bool) -> None:
    """Oldest first: a listing reads as what happened, in order."""
    ordered = sorted(views, key=lambda view: (view.first_at_ms or 0, view.trace))
    if as_json:
        for view in ordered:
            click.echo(compact_json(view))
        return
    print_table(COLUMNS, [_row(view) for view in ordered])


def _row(view: TraceView) -> tuple[str, ...]:
    state = None if view.state is None else state_text(view.state, view.reason)
    notes = [note for note in (state, "incomplete" if view.incomplete else None) if note]
    return (
        view.trace,
        view.runtime or "-",
        when(view.first_at_ms),
        when(view.last_at_ms),
        str(view.entries),
        str(view.frames),
        "; ".join(notes) or "-",
        _origin(view),
    )


def _origin(view: TraceView) -> str:
    origins = [f"fork of {fork_text(view.forked_from)}"] if view.forked_from else []
    if view.adopted:
        origins.append("adopted")
    return ", ".join(origins) or "-"


__all__ = ["COLUMNS", "local_traces", "print_traces", "server_traces"]
