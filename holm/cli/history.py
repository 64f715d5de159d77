"""Reading what happened from the server: a box's trace (`holm trace BOX_ID`, the server
branch of the `trace` command) and the events feed (`holm events`).

Both print one line an entry (the trace in the text form of docs/trace.md), or with
`--json` one JSON object a line (JSONL, as the trace is stored), and with `--follow` keep
reading as new ones land."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import click

from holm.cli.output import compact_json, when
from holm.cli.remote import Remote, remote
from holm.projections.text import INCOMPLETE_LINE, entry_line, pruned_note
from holm.wire.entries import PAGE_MAX, BoxDeleted, BoxGone, Entry
from holm.wire.feed import LIMIT_MAX, Event

T = TypeVar("T")

# How often `--follow` asks again once it has read everything there is.
FOLLOW_POLL_SECS = 0.5


def paged(
    read: Callable[[int | None, int], tuple[Sequence[T], int, bool]],
    *,
    after: int | None,
    limit: int | None,
    page_max: int,
    follow: bool = False,
    follow_timeout: float | None = None,
) -> Iterator[T]:
    """Items from pages read one after the other (`read(after, limit)` gives a page's
    items, its `next` and whether there is `more`), at most `limit` in all. With `follow`,
    on until `follow_timeout` seconds (for ever when None), asking again every
    `FOLLOW_POLL_SECS` once there is nothing more."""
    deadline = None if follow_timeout is None else time.monotonic() + follow_timeout
    left = limit
    while left is None or left > 0:
        items, after, more = read(after, min(left or page_max, page_max))
        yield from items
        if left is not None:
            left -= len(items)
        if more:
            continue
        if not follow or (deadline is not None and time.monotonic() >= deadline):
            return
        time.sleep(FOLLOW_POLL_SECS)


class _ServerTrace:
    """Pages of one box's trace; `incomplete` and `first_seq` are what the last page
    said."""

    def __init__(self, remote: Remote, box_id: str) -> None:
        self.remote = remote
        self.box_id = box_id
        self.incomplete = False
        self.first_seq = 0

    def read(self, after: int | None, limit: int) -> tuple[list[Entry], int, bool]:
        page = self.remote.client.trace(self.box_id, after=after, limit=limit)
        self.incomplete = page.incomplete
        self.first_seq = page.first_seq
        return page.entries, page.next, page.more


def read_server_trace(
    remote: Remote, box_id: str, *, after: int | None, limit: int | None
) -> tuple[list[Entry], bool]:
    """The box's entries after `after` (at most `limit`), and whether the trace is
    incomplete (its writer stopped mid-line)."""
    trace = _ServerTrace(remote, box_id)
    entries = list(paged(trace.read, after=after, limit=limit, page_max=PAGE_MAX))
    return entries, trace.incomplete


def print_server_trace(
    remote: Remote,
    box_id: str,
    *,
    after: int | None,
    limit: int | None,
    follow: bool = False,
    follow_timeout: float | None = None,
) -> None:
    """`holm trace BOX_ID`: the trace of a box read from the server, one line an entry
    (`--json`: as stored); `--follow` ends when the box is removed."""
    trace = _ServerTrace(remote, box_id)
    entries = paged(
        trace.read,
        after=after,
        limit=limit,
        page_max=PAGE_MAX,
        follow=follow,
        follow_timeout=follow_timeout,
    )
    try:
        first = after is None
        for entry in entries:
            note = pruned_note(trace.first_seq, entry.seq) if first else None
            if note is not None:
                # Read from its start, the trace begins later: its front was pruned.
                click.echo(
                    f"holm: {box_id}: {note}" if remote.as_json else note, err=remote.as_json
                )
            first = False
            click.echo(compact_json(entry) if remote.as_json else entry_line(entry))
            if follow and isinstance(entry, BoxDeleted | BoxGone):
                break
    except KeyboardInterrupt:
        return
    if trace.incomplete:
        # With --json, stdout stays pure JSON lines for jq; the note goes beside it.
        if remote.as_json:
            click.echo(f"holm: {box_id}: {INCOMPLETE_LINE}", err=True)
        else:
            click.echo(INCOMPLETE_LINE)


def event_line(event: Event) -> str:
    parts = [f"{event.seq}", when(event.at_ms), f"{event.kind:<17}"]
    parts.extend(value for value in (event.box_id, event.runtime) if value)
    if event.data:
        parts.append(compact_json(event.data))
    return "  ".join(parts)


@click.command("events")
@click.option("--after", type=int, default=0, help="Read events after this seq (a `next`).")
@click.option("--limit", type=click.IntRange(0), help="Print at most this many events.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing events as they come.")
# For tests and scripts: stop following after this many seconds.
@click.option("--follow-timeout", type=float, hidden=True)
@remote
def events(
    remote: Remote,
    after: int,
    limit: int | None,
    follow: bool,
    follow_timeout: float | None,
) -> None:
    """Print the server's events feed: what happened to boxes, screens and images. An
    event shows about two seconds after it happened."""

    def read(after: int | None, limit: int) -> tuple[list[Event], int, bool]:
        page = remote.client.events(after=after, limit=limit)
        return page.events, page.next, page.more

    feed = paged(
        read,
        after=after,
        limit=limit,
        page_max=LIMIT_MAX,
        follow=follow,
        follow_timeout=follow_timeout,
    )
    try:
        for event in feed:
            click.echo(compact_json(event) if remote.as_json else event_line(event))
    except KeyboardInterrupt:
        return


COMMANDS: tuple[click.Command, ...] = (events,)

__all__ = ["COMMANDS", "event_line", "paged", "print_server_trace", "read_server_trace"]
