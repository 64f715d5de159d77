"""The events feed: which entries make which events, paging (after, limit, next, more, the
1000 cap), owner scoping, the delay and the retention, and (hypothesis) that the feed kept
entry by entry equals the feed rebuilt from scratch, seqs included."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from projection_kit import T0, TraceBuilder, box_trace, server_trace

from holm.config import Config
from holm.errors import BadRequest
from holm.projections import (
    LIMIT_MAX,
    LOST_REASON,
    Event,
    EventsFeed,
    events_from_traces,
    read_page,
)
from holm.wire.entries import (
    SERVER_TRACE,
    BoxDeleted,
    BoxFailed,
    BoxGone,
    BoxPaused,
    BoxReady,
    BoxResumed,
    BoxStarted,
    BoxStopped,
    BoxUnreachable,
    Entry,
    ImageBuilt,
    ImageRemoved,
    PoolFailing,
    PoolRecovered,
    TakeoverEnded,
    TakeoverStarted,
)

DAY_MS = 24 * 3600 * 1000
# Late enough that every event of these tests is served (past the 2 s delay).
LATER = T0 + DAY_MS


def feed_of(*traces: TraceBuilder) -> EventsFeed:
    feed = EventsFeed()
    for trace in traces:
        feed.add(trace.box_id, trace.entries)
    return feed


def test_each_entry_makes_its_event(trace: TraceBuilder) -> None:
    created = trace.created(owner="ws_a", runtime="docker")
    trace.add(BoxReady, actor="system", viewer_urls=["http://v/0"])
    trace.acted()
    trace.frame()
    trace.add(TakeoverStarted, screen=0, shared=True)
    trace.add(TakeoverEnded, screen=0)
    trace.add(BoxPaused)
    trace.add(BoxResumed)
    trace.add(BoxStopped)
    trace.add(BoxStarted)
    trace.add(BoxReady, actor="system")
    trace.add(BoxUnreachable, actor="system", reason="lost")
    trace.add(BoxFailed, actor="system", why="no image")
    trace.add(BoxGone, actor="system", reason="expired")
    events = feed_of(trace).read(now_ms=LATER).events
    assert [(e.kind, e.data) for e in events] == [
        (
            "box.created",
            {"spec_digest": created.spec_digest, "expires_at_ms": created.expires_at_ms},
        ),
        ("box.ready", {"viewer_urls": ["http://v/0"]}),
        ("screen.taken_over", {"screen": 0, "shared": True}),
        ("screen.given_back", {"screen": 0}),
        ("box.paused", None),
        # A resume is the same desktop ready again, with its viewers.
        ("box.ready", {"viewer_urls": ["http://v/0"]}),
        ("box.stopped", None),
        ("box.ready", {"viewer_urls": []}),
        ("box.unreachable", {"reason": "lost"}),
        ("box.failed", {"why": "no image"}),
        ("box.removed", {"reason": "expired"}),
    ]
    assert {(e.owner, e.box_id, e.runtime) for e in events} == {("ws_a", "box_test", "docker")}


def test_delete_is_a_removal(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(BoxDeleted)
    events = feed_of(trace).read(now_ms=LATER).events
    assert [(e.kind, e.data) for e in events][-1] == ("box.removed", {"reason": "deleted"})


def test_a_box_its_runtime_no_longer_has_is_unreachable(trace: TraceBuilder) -> None:
    # rest-api.md: `box.unreachable`: "The runtime no longer has the box."; `box.removed`
    # is for a box deleted or past its deadline.
    trace.created()
    trace.add(BoxReady, actor="system")
    trace.add(BoxGone, actor="system", reason=LOST_REASON)
    events = feed_of(trace).read(now_ms=LATER).events
    assert [(e.kind, e.data) for e in events][-1] == ("box.unreachable", {"reason": LOST_REASON})
    assert "box.removed" not in [e.kind for e in events]


def test_images_come_from_the_server_trace() -> None:
    server = TraceBuilder(SERVER_TRACE)
    server.add(ImageBuilt, actor="system", runtime="docker", image="img:1", spec_digest="d1")
    server.add(ImageRemoved, runtime="docker", image="img:1", spec_digest="d1")
    events = feed_of(server).read(now_ms=LATER).events
    assert [(e.kind, e.runtime, e.box_id, e.owner, e.data) for e in events] == [
        ("image.built", "docker", None, None, {"image": "img:1", "spec_digest": "d1"}),
        ("image.removed", "docker", None, None, {"image": "img:1", "spec_digest": "d1"}),
    ]


def test_the_pool_failing_and_recovering_come_from_the_server_trace() -> None:
    server = TraceBuilder(SERVER_TRACE)
    why = "bwrap: cannot mount /proc"
    server.add(
        PoolFailing, actor="system", runtime="local", spec_digest="d1", why=why, retry_at_ms=9
    )
    server.add(PoolRecovered, actor="system", runtime="local", spec_digest="d1")
    events = feed_of(server).read(now_ms=LATER).events
    assert [(e.kind, e.runtime, e.box_id, e.owner, e.data) for e in events] == [
        ("pool.failing", "local", None, None, {"spec_digest": "d1", "why": why, "retry_at_ms": 9}),
        ("pool.recovered", "local", None, None, {"spec_digest": "d1"}),
    ]


def test_event_json_leaves_out_what_does_not_apply(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(BoxPaused)
    page = feed_of(trace).read(now_ms=LATER)
    body = msgspec.to_builtins(page)
    assert set(body) == {"events", "next", "more"}
    assert set(body["events"][1]) == {"seq", "at_ms", "kind", "box_id", "runtime"}


def test_a_workspace_reads_its_own_events_and_the_server_token_all() -> None:
    a, b, mine = TraceBuilder("box_a"), TraceBuilder("box_b"), TraceBuilder("box_server")
    a.created(owner="ws_a")
    b.created(owner="ws_b")
    mine.created(owner=None)
    server = TraceBuilder(SERVER_TRACE)
    server.add(ImageBuilt, runtime="docker", image="i", spec_digest="d")
    feed = feed_of(a, b, mine, server)
    assert [e.box_id for e in feed.read(now_ms=LATER, owner="ws_a").events] == ["box_a"]
    assert [e.box_id for e in feed.read(now_ms=LATER, owner="ws_b").events] == ["box_b"]
    assert feed.read(now_ms=LATER, owner="ws_nobody").events == []
    assert len(feed.read(now_ms=LATER).events) == 4


def many(n: int, gap_ms: int = 10) -> TraceBuilder:
    trace = TraceBuilder()
    trace.created()
    for _ in range(n - 1):
        trace.add(BoxPaused, gap_ms=gap_ms)
    return trace


def test_pages_follow_next_until_no_more() -> None:
    feed = feed_of(many(5))
    first = feed.read(now_ms=LATER, limit=2)
    assert len(first.events) == 2 and first.more
    assert first.next == first.events[-1].seq
    second = feed.read(now_ms=LATER, after=first.next, limit=2)
    third = feed.read(now_ms=LATER, after=second.next, limit=2)
    assert (len(second.events), second.more, len(third.events), third.more) == (2, True, 1, False)
    seqs = [e.seq for page in (first, second, third) for e in page.events]
    assert seqs == sorted(set(seqs))
    done = feed.read(now_ms=LATER, after=third.next)
    assert (done.events, done.next, done.more) == ([], third.next, False)


def test_default_limit_is_200_and_the_cap_1000() -> None:
    feed = feed_of(many(1500))
    assert len(feed.read(now_ms=LATER).events) == 200
    page = feed.read(now_ms=LATER, limit=5000)
    assert len(page.events) == LIMIT_MAX == 1000 and page.more
    rest = feed.read(now_ms=LATER, after=page.next, limit=5000)
    assert (len(rest.events), rest.more) == (500, False)


@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_under_one_is_refused(limit: int) -> None:
    with pytest.raises(BadRequest):
        feed_of(many(2)).read(now_ms=LATER, limit=limit)


def test_an_event_shows_once_it_is_two_seconds_old(trace: TraceBuilder) -> None:
    created = trace.created()
    feed = feed_of(trace)
    assert Config().events_delay_ms == 2000
    assert feed.read(now_ms=created.at_ms + 1999).events == []
    assert not feed.read(now_ms=created.at_ms + 1999).more
    assert len(feed.read(now_ms=created.at_ms + 2000).events) == 1


def test_events_older_than_seven_days_are_not_served() -> None:
    trace = many(3, gap_ms=DAY_MS)
    feed = feed_of(trace)
    last = trace.entries[-1].at_ms
    seven_days_after_second = trace.entries[1].at_ms + 7 * DAY_MS
    page = feed.read(now_ms=seven_days_after_second)
    assert [e.at_ms for e in page.events] == [trace.entries[1].at_ms, last]
    one_ms_later = feed.read(now_ms=seven_days_after_second + 1)
    assert [e.at_ms for e in one_ms_later.events] == [last]


def test_prune_forgets_only_what_is_not_served() -> None:
    trace = many(3, gap_ms=DAY_MS)
    feed = feed_of(trace)
    now = trace.entries[1].at_ms + 7 * DAY_MS
    before = feed.read(now_ms=now)
    feed.prune(now)
    assert feed.read(now_ms=now) == before
    assert len(feed.events()) == 2


def test_events_of_one_millisecond_are_ordered_by_trace_then_entry() -> None:
    b, a = TraceBuilder("box_b", start_ms=T0), TraceBuilder("box_a", start_ms=T0)
    b.created()
    b.add(BoxPaused, gap_ms=0)
    a.created()
    feed = feed_of(b)
    assert [e.seq for e in feed.events()] == [T0 * 1000, T0 * 1000 + 1]
    feed.add("box_a", a.entries)
    # box_a sorts first: the events of box_b in that millisecond move up by one.
    assert [(e.box_id, e.seq) for e in feed.events()] == [
        ("box_a", T0 * 1000),
        ("box_b", T0 * 1000 + 1),
        ("box_b", T0 * 1000 + 2),
    ]
    assert feed.events() == events_from_traces({"box_b": b.entries, "box_a": a.entries})


def test_adding_an_entry_again_changes_nothing(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(BoxPaused)
    feed = feed_of(trace)
    feed.add(trace.box_id, trace.entries)
    assert len(feed.events()) == 2


def test_rebuilt_feed_goes_on_with_appended_entries(trace: TraceBuilder) -> None:
    trace.created(owner="ws_a")
    feed = EventsFeed.rebuilt({trace.box_id: list(trace.entries)})
    paused = trace.add(BoxPaused)
    feed.add(trace.box_id, [paused])
    assert [e.kind for e in feed.read(now_ms=LATER, owner="ws_a").events] == [
        "box.created",
        "box.paused",
    ]


# Agreement: incremental == rebuilt, for random traces whose entries land interleaved.

# Gaps of 0-2 ms, so that events of different boxes often share a millisecond.
_traces = st.lists(box_trace(max_gap_ms=2, max_len=15), min_size=1, max_size=4).flatmap(
    lambda boxes: st.tuples(st.just(boxes), server_trace(max_gap_ms=2))
)


def _named(boxes: list[list[Entry]], server: list[Entry]) -> dict[str, list[Entry]]:
    traces = {f"box_{i}": entries for i, entries in enumerate(boxes)}
    traces[SERVER_TRACE] = server
    return traces


@given(_traces, st.data())
def test_incremental_feed_equals_feed_rebuilt_from_scratch(
    traces_drawn: tuple[list[list[Entry]], list[Entry]], data: st.DataObject
) -> None:
    traces = _named(*traces_drawn)
    # The order the entries land in: each trace's in seq order, the traces interleaved.
    landing = data.draw(st.permutations([name for name, es in traces.items() for _ in es]))
    feed, taken = EventsFeed(), dict.fromkeys(traces, 0)
    for name in landing:
        feed.add(name, [traces[name][taken[name]]])
        taken[name] += 1

    rebuilt = events_from_traces(traces)
    assert feed.events() == rebuilt
    assert EventsFeed.rebuilt(traces).events() == rebuilt
    seqs = [e.seq for e in rebuilt]
    assert seqs == sorted(set(seqs))

    now = data.draw(st.integers(T0, T0 + 200))
    after = data.draw(st.sampled_from([0, *seqs]))
    limit = data.draw(st.integers(1, 20))
    owner = data.draw(st.sampled_from([None, "ws_a", "ws_b"]))
    page = feed.read(now_ms=now, after=after, limit=limit, owner=owner)
    assert page == read_page(rebuilt, now_ms=now, after=after, limit=limit, owner=owner)


@given(_traces, st.data())
def test_seqs_of_served_events_survive_pruning_old_traces(
    traces_drawn: tuple[list[list[Entry]], list[Entry]], data: st.DataObject
) -> None:
    traces = _named(*traces_drawn)
    keep_ms = data.draw(st.integers(0, 60))
    now = data.draw(st.integers(T0, T0 + 120))
    oldest_kept = now - keep_ms
    # What a store's prune does: drop a whole trace whose last entry is older than kept.
    kept = {n: es for n, es in traces.items() if es and es[-1].at_ms >= oldest_kept}

    def served(events: list[Event]) -> list[Event]:
        return [e for e in events if e.at_ms >= oldest_kept]

    assert served(events_from_traces(kept)) == served(events_from_traces(traces))
