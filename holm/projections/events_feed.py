"""The events feed (`GET /v1/events`): what happened to boxes, screens and images, derived
from the traces' entries. It is a projection like the box state: rebuilt from scratch over
the traces, it gives the same events with the same `seq`s as the feed kept up to date entry
by entry.

The events, and the entry each comes from:

    box.created        box_created            box.ready          box_ready, box_resumed
    box.paused         box_paused             box.stopped        box_stopped
    box.removed        box_deleted, gone      box.unreachable    box_unreachable, gone
                                                                 (its runtime lost it)
    box.failed         box_failed             screen.taken_over  takeover_started
    screen.given_back  takeover_ended         image.built        image_built (server trace)
    image.removed      image_removed (server trace)
    runtime.added      runtime_added (server trace)
    runtime.changed    runtime_changed (server trace)
    runtime.removed    runtime_removed (server trace)
    pool.failing       pool_failing (server trace)
    pool.recovered     pool_recovered (server trace)

Why `seq` is what it is: the feed has no counter of its own to keep, so `seq` must be a pure
function of the entries. Events are ordered by (`at_ms`, trace, entry seq), and

    seq = at_ms * 1000 + the event's rank among the events of the same millisecond

So seqs increase with the order, are not contiguous, and fit a JSON number that JavaScript
reads exactly (below 2**53 until the year 2255). A seq depends only on the events of its own
millisecond, so it survives a rebuild, and a prune that drops old events (they go whole
milliseconds at a time), and a prune of whole traces by age, as long as traces are kept at
least as long as events (`HOLM_KEEP_ENTRIES_SECS` >= `HOLM_KEEP_EVENTS_SECS`): a trace old
enough to go has no event still served. An event is served only once it is
`events_delay_ms` old, by when the entries of every box for that millisecond have landed,
so the seqs a reader saw do not move. A millisecond holds at most 1000 events; each one
needs its own runtime call or request, so a millisecond never comes near it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import msgspec

from holm.config import Config
from holm.errors import BadRequest
from holm.projections.box_state import DELETED_REASON, LOST_REASON
from holm.wire.entries import (
    Adopted,
    BoxCreated,
    BoxDeleted,
    BoxFailed,
    BoxGone,
    BoxPaused,
    BoxReady,
    BoxResumed,
    BoxStopped,
    BoxUnreachable,
    Entry,
    ImageBuilt,
    ImageRemoved,
    PoolFailing,
    PoolRecovered,
    RuntimeAdded,
    RuntimeChanged,
    RuntimeRemoved,
    TakeoverEnded,
    TakeoverStarted,
)
from holm.wire.feed import LIMIT_DEFAULT, LIMIT_MAX, Event, EventKind, EventsPage

SEQ_PER_MS = 1000


class _Box(NamedTuple):
    owner: str | None
    runtime: str | None
    # The viewers of the desktop now up (its last `box_ready`): a resumed box is the same
    # desktop, so its `box.ready` names them again.
    viewer_urls: tuple[str, ...] = ()


# The place of an event in the feed's order: (at_ms, trace, entry seq).
_Key = tuple[int, str, int]


def event_of(trace: str, entry: Entry, box: _Box | None) -> Event | None:
    """The event an entry makes (with `seq` 0, given later), or None. `box` is what the
    trace's earlier entries said about the box: its owner and runtime."""
    match entry:
        case BoxCreated(spec_digest=digest, expires_at_ms=expires):
            data = {"spec_digest": digest, "expires_at_ms": expires}
            return _box_event("box.created", trace, entry, box, data)
        case BoxReady(viewer_urls=viewer_urls):
            return _box_event("box.ready", trace, entry, box, {"viewer_urls": viewer_urls})
        case BoxResumed():
            # A paused box is ready again, with the desktop it had (docs/api.md).
            urls = list(box.viewer_urls) if box is not None else []
            return _box_event("box.ready", trace, entry, box, {"viewer_urls": urls})
        case BoxPaused():
            return _box_event("box.paused", trace, entry, box)
        case BoxStopped():
            return _box_event("box.stopped", trace, entry, box)
        case BoxGone(reason=reason):
            # rest-api.md: `box.unreachable` is "the runtime no longer has the box";
            # `box.removed` a box deleted or past its deadline.
            if reason == LOST_REASON:
                return _box_event("box.unreachable", trace, entry, box, {"reason": reason})
            return _box_event("box.removed", trace, entry, box, {"reason": reason})
        case BoxDeleted():
            return _box_event("box.removed", trace, entry, box, {"reason": DELETED_REASON})
        case BoxUnreachable(reason=reason):
            return _box_event("box.unreachable", trace, entry, box, {"reason": reason})
        case BoxFailed(why=why):
            return _box_event("box.failed", trace, entry, box, {"why": why})
        case TakeoverStarted(screen=screen, shared=shared):
            data = {"screen": screen, "shared": shared}
            return _box_event("screen.taken_over", trace, entry, box, data)
        case TakeoverEnded(screen=screen):
            return _box_event("screen.given_back", trace, entry, box, {"screen": screen})
        case RuntimeChanged(name=name, provider=provider, fields=fields):
            data = {"provider": provider, "fields": fields}
            return Event(seq=0, at_ms=entry.at_ms, kind="runtime.changed", runtime=name, data=data)
        case RuntimeAdded(name=name, provider=provider, fields=fields):
            data = {"provider": provider, "fields": fields}
            return Event(seq=0, at_ms=entry.at_ms, kind="runtime.added", runtime=name, data=data)
        case RuntimeRemoved(name=name):
            return Event(seq=0, at_ms=entry.at_ms, kind="runtime.removed", runtime=name)
        case ImageBuilt() | ImageRemoved():
            kind: EventKind = "image.built" if isinstance(entry, ImageBuilt) else "image.removed"
            data = {"image": entry.image, "spec_digest": entry.spec_digest}
            return Event(seq=0, at_ms=entry.at_ms, kind=kind, runtime=entry.runtime, data=data)
        case PoolFailing(runtime=runtime, spec_digest=digest, why=why, retry_at_ms=retry_at):
            data = {"spec_digest": digest, "why": why, "retry_at_ms": retry_at}
            return Event(seq=0, at_ms=entry.at_ms, kind="pool.failing", runtime=runtime, data=data)
        case PoolRecovered(runtime=runtime, spec_digest=digest):
            data = {"spec_digest": digest}
            return Event(
                seq=0, at_ms=entry.at_ms, kind="pool.recovered", runtime=runtime, data=data
            )
        case _:
            return None


def _box_event(
    kind: EventKind, trace: str, entry: Entry, box: _Box | None, data: dict[str, Any] | None = None
) -> Event:
    owner, runtime = (box.owner, box.runtime) if box is not None else (None, None)
    return Event(
        seq=0, at_ms=entry.at_ms, kind=kind, owner=owner, box_id=trace, runtime=runtime, data=data
    )


def _keyed_events(
    trace: str, entries: Iterable[Entry], boxes: dict[str, _Box]
) -> Iterator[tuple[_Key, Event]]:
    """The events of one trace's entries (in seq order), keeping `boxes[trace]` up to date
    from its `box_created` or `adopted` (an adoption that names no owner keeps the one the
    trace had) and the viewers of its last `box_ready` (until the desktop stops)."""
    for entry in entries:
        if isinstance(entry, BoxCreated | Adopted):
            owner = entry.owner
            if isinstance(entry, Adopted) and owner is None and trace in boxes:
                owner = boxes[trace].owner
            boxes[trace] = _Box(owner, entry.runtime)
        elif trace in boxes and isinstance(entry, BoxReady | BoxStopped):
            urls = tuple(entry.viewer_urls) if isinstance(entry, BoxReady) else ()
            boxes[trace] = boxes[trace]._replace(viewer_urls=urls)
        event = event_of(trace, entry, boxes.get(trace))
        if event is not None:
            yield (entry.at_ms, trace, entry.seq), event


def _numbered(keyed: Iterable[tuple[_Key, Event]]) -> list[tuple[_Key, Event]]:
    """Events in the feed's order, each with its seq (see the module's docstring)."""
    numbered = []
    rank, last_ms = 0, None
    for key, event in sorted(keyed, key=lambda pair: pair[0]):
        rank = rank + 1 if key[0] == last_ms else 0
        last_ms = key[0]
        numbered.append((key, msgspec.structs.replace(event, seq=key[0] * SEQ_PER_MS + rank)))
    return numbered


def _keyed_traces(
    traces: Mapping[str, Iterable[Entry]], boxes: dict[str, _Box]
) -> list[tuple[_Key, Event]]:
    return [
        pair for trace, entries in traces.items() for pair in _keyed_events(trace, entries, boxes)
    ]


def events_from_traces(traces: Mapping[str, Iterable[Entry]]) -> list[Event]:
    """The whole feed, rebuilt from scratch: every trace's entries (each trace's in seq
    order) → the events in order, with their seqs."""
    return [event for _, event in _numbered(_keyed_traces(traces, {}))]


def read_page(
    events: Sequence[Event],
    *,
    now_ms: int,
    after: int = 0,
    limit: int = LIMIT_DEFAULT,
    owner: str | None = None,
    delay_ms: int = Config().events_delay_ms,
    keep_secs: int = Config().keep_events_secs,
) -> EventsPage:
    """One page of `events` (in the feed's order) as `GET /v1/events` answers it: those
    with seq > `after`, at least `delay_ms` old, not older than `keep_secs`, of `owner`
    (None: every owner, as the server token reads), at most `limit` (capped at 1000)."""
    mine = events if owner is None else [e for e in events if e.owner == owner]
    return _page(mine, after, limit, now_ms, delay_ms, keep_secs)


def _page(
    events: Sequence[Event], after: int, limit: int, now_ms: int, delay_ms: int, keep_secs: int
) -> EventsPage:
    if limit < 1:
        raise BadRequest("limit must be at least 1")
    limit = min(limit, LIMIT_MAX)
    # Since seq = at_ms * 1000 + rank, the events old enough and not too old are a range
    # of seqs, found by bisection.
    oldest_ms = now_ms - keep_secs * 1000
    newest_ms = now_ms - delay_ms
    start = bisect_right(events, max(after, oldest_ms * SEQ_PER_MS - 1), key=_seq)
    end = bisect_left(events, (newest_ms + 1) * SEQ_PER_MS, key=_seq)
    page = list(events[start : min(end, start + limit)])
    return EventsPage(events=page, next=page[-1].seq if page else after, more=start + limit < end)


def _seq(event: Event) -> int:
    return event.seq


class _Ordered:
    """Events kept in the feed's order, with their keys beside them for bisection."""

    def __init__(self) -> None:
        self.keys: list[_Key] = []
        self.events: list[Event] = []

    def index(self, key: _Key) -> int:
        return bisect_left(self.keys, key)

    def insert(self, key: _Key, event: Event) -> int:
        index = bisect_right(self.keys, key)
        self.keys.insert(index, key)
        self.events.insert(index, event)
        return index

    def drop_before(self, at_ms: int) -> None:
        cut = bisect_left(self.keys, (at_ms, "", -1))
        del self.keys[:cut], self.events[:cut]


class EventsFeed:
    """The feed kept up to date as entries are appended (`add`), read a page at a time
    (`read`). `EventsFeed.rebuilt(traces)` makes one from scratch; the two agree."""

    def __init__(
        self,
        *,
        delay_ms: int = Config().events_delay_ms,
        keep_secs: int = Config().keep_events_secs,
    ) -> None:
        self.delay_ms = delay_ms
        self.keep_secs = keep_secs
        self._all = _Ordered()
        self._by_owner: dict[str, _Ordered] = {}
        self._boxes: dict[str, _Box] = {}

    @classmethod
    def for_config(cls, config: Config) -> EventsFeed:
        return cls(delay_ms=config.events_delay_ms, keep_secs=config.keep_events_secs)

    @classmethod
    def rebuilt(
        cls, traces: Mapping[str, Iterable[Entry]], config: Config | None = None
    ) -> EventsFeed:
        """A feed over whole traces, sorted in one go rather than entry by entry."""
        feed = cls() if config is None else cls.for_config(config)
        for key, event in _numbered(_keyed_traces(traces, feed._boxes)):
            feed._all.keys.append(key)
            feed._all.events.append(event)
            if event.owner is not None:
                mine = feed._by_owner.setdefault(event.owner, _Ordered())
                mine.keys.append(key)
                mine.events.append(event)
        return feed

    def add(self, trace: str, entries: Iterable[Entry]) -> None:
        """Take in entries just appended to `trace`, in seq order. An entry taken in
        before is ignored, so reading a trace again does no harm."""
        for key, event in _keyed_events(trace, entries, self._boxes):
            index = self._all.index(key)
            if index < len(self._all.keys) and self._all.keys[index] == key:
                continue
            self._all.insert(key, event)
            if event.owner is not None:
                self._by_owner.setdefault(event.owner, _Ordered()).insert(key, event)
            self._number_millisecond(key[0])

    def _number_millisecond(self, at_ms: int) -> None:
        """Give the events of one millisecond their seqs again: one more came in among
        them, so those after it move up by one."""
        keys, events = self._all.keys, self._all.events
        start = bisect_left(keys, (at_ms, "", -1))
        rank = 0
        while start + rank < len(keys) and keys[start + rank][0] == at_ms:
            index = start + rank
            seq = at_ms * SEQ_PER_MS + rank
            if events[index].seq != seq:
                events[index] = msgspec.structs.replace(events[index], seq=seq)
                owner = events[index].owner
                if owner is not None:
                    mine = self._by_owner[owner]
                    mine.events[mine.index(keys[index])] = events[index]
            rank += 1

    def read(
        self,
        *,
        now_ms: int,
        after: int = 0,
        limit: int = LIMIT_DEFAULT,
        owner: str | None = None,
    ) -> EventsPage:
        """See `read_page`."""
        if owner is None:
            events = self._all.events
        else:
            events = self._by_owner[owner].events if owner in self._by_owner else []
        return _page(events, after, limit, now_ms, self.delay_ms, self.keep_secs)

    def events(self) -> list[Event]:
        """Every event held, served or not yet, in order."""
        return list(self._all.events)

    def prune(self, now_ms: int) -> None:
        """Forget the events too old to be served."""
        oldest_ms = now_ms - self.keep_secs * 1000
        self._all.drop_before(oldest_ms)
        for owner, mine in list(self._by_owner.items()):
            mine.drop_before(oldest_ms)
            if not mine.keys:
                del self._by_owner[owner]


__all__ = [
    "LIMIT_DEFAULT",
    "LIMIT_MAX",
    "SEQ_PER_MS",
    "Event",
    "EventKind",
    "EventsFeed",
    "EventsPage",
    "event_of",
    "events_from_traces",
    "read_page",
]
