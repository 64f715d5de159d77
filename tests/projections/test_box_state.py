"""A box's state as the fold over its trace: every lifecycle change, what each entry leaves
behind, and (hypothesis) that folding in one go equals folding a prefix and then the rest."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from projection_kit import STATE_AFTER, TraceBuilder, box_trace

from holm.engine import guards
from holm.errors import Denied
from holm.projections import BoxState, NotABoxTrace, apply, fold
from holm.projections.box_state import borne, state_bearing
from holm.wire.api import ForkOrigin
from holm.wire.entries import (
    Adopted,
    BoxCreated,
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
    ForkedFrom,
    ImageBuilt,
    TakeoverEnded,
    TakeoverStarted,
)
from holm.wire.spec import DesktopSpec, Placement, Spec


def folded(trace: TraceBuilder) -> BoxState:
    state = fold(trace.entries)
    assert state is not None
    return state


def test_created_box_is_starting_with_its_spec_and_deadline(trace: TraceBuilder) -> None:
    spec = Spec(desktop=DesktopSpec(width=1024, height=768, screens=2))
    created = trace.created(
        spec, owner="ws_a", placement=Placement(runtime="local", idle_timeout_secs=900)
    )
    state = folded(trace)
    assert state.id == "box_test"
    assert state.runtime == "local"
    assert state.state == "starting"
    assert not state.removed and state.reason is None
    assert state.spec == spec and state.spec_digest == created.spec_digest
    assert state.placement == created.placement
    assert state.created_at_ms == created.at_ms
    assert state.expires_at_ms == created.expires_at_ms
    assert state.idle_timeout_secs == 900
    assert state.last_used_ms == created.at_ms
    assert state.owner == "ws_a"
    assert (state.screens, state.width, state.height) == (2, 1024, 768)
    assert state.frames == (None, None)
    assert state.held_by == ("agent", "agent")
    assert state.last_seq == 0


def test_default_spec_gives_one_screen_of_1280x800(trace: TraceBuilder) -> None:
    trace.created(Spec())
    state = folded(trace)
    assert (state.screens, state.width, state.height) == (1, 1280, 800)


def test_ready_carries_viewer_and_devtools_urls(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(BoxReady, actor="system", viewer_urls=["http://v/0"], devtools_url="http://d")
    state = folded(trace)
    assert state.state == "ready"
    assert state.viewer_urls == ("http://v/0",)
    assert state.devtools_url == "http://d"


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([BoxReady], "ready"),
        ([BoxReady, BoxPaused], "paused"),
        ([BoxReady, BoxPaused, BoxResumed], "ready"),
        ([BoxReady, BoxStopped], "stopped"),
        ([BoxReady, BoxStopped, BoxStarted], "starting"),
        ([BoxReady, BoxStopped, BoxStarted, BoxReady], "ready"),
        ([BoxReady, BoxStopped, BoxResumed], "ready"),
    ],
)
def test_lifecycle_moves(trace: TraceBuilder, steps: list[type[Entry]], expected: str) -> None:
    trace.created()
    for cls in steps:
        trace.add(cls)
    state = folded(trace)
    assert state.state == expected
    assert not state.removed and state.reason is None


def test_failed_start_says_why(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(BoxFailed, actor="system", why="no image")
    state = folded(trace)
    assert (state.state, state.reason, state.removed) == ("failed", "no image", False)


def test_unreachable_box_says_why_and_comes_back_when_ready(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(BoxReady)
    trace.add(BoxUnreachable, actor="system", reason="lost")
    state = folded(trace)
    assert (state.state, state.reason, state.removed) == ("unreachable", "lost", False)
    trace.add(BoxReady, actor="system")
    state = folded(trace)
    assert (state.state, state.reason) == ("ready", None)


def test_gone_removes_with_reason(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(BoxReady)
    trace.add(BoxGone, actor="system", reason="expired")
    state = folded(trace)
    assert (state.state, state.removed, state.reason) == ("gone", True, "expired")


def test_deleted_box_is_removed(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(BoxReady)
    trace.add(BoxDeleted)
    state = folded(trace)
    assert (state.state, state.removed, state.reason) == ("gone", True, "deleted")


def test_removed_stays_removed(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(BoxDeleted)
    trace.add(BoxReady, actor="system")
    assert folded(trace).removed


def test_frames_and_takeovers_are_kept_per_screen(trace: TraceBuilder) -> None:
    trace.created(Spec(desktop=DesktopSpec(screens=2)))
    trace.frame(0, name="a")
    trace.frame(1, name="b")
    trace.add(TakeoverStarted, screen=1)
    trace.frame(1, actor="person", name="c")
    state = folded(trace)
    assert state.frames == ("sha256:a", "sha256:c")
    assert state.held_by == ("agent", "person")
    trace.add(TakeoverEnded, screen=1)
    assert folded(trace).held_by == ("agent", "agent")


def test_a_shared_takeover_is_a_person_s_screen_the_agent_may_drive(trace: TraceBuilder) -> None:
    trace.created(Spec(desktop=DesktopSpec(screens=2)))
    trace.add(TakeoverStarted, screen=0, shared=True)
    trace.add(TakeoverStarted, screen=1)
    state = folded(trace)
    assert state.held_by == ("person", "person") and state.shared == frozenset({0})
    guards.screen_of(state, 0, drive=True)
    with pytest.raises(Denied):
        guards.screen_of(state, 1, drive=True)
    trace.add(TakeoverEnded, screen=0)
    assert folded(trace).shared == frozenset()


def test_stop_ends_the_desktop_it_had(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(BoxReady, viewer_urls=["http://v/0"])
    trace.frame(0)
    trace.add(TakeoverStarted, screen=0)
    trace.add(BoxStopped)
    state = folded(trace)
    assert state.frames == (None,)
    assert state.held_by == ("agent",)
    assert state.viewer_urls == ()


def test_last_used_follows_agents_and_people_not_the_server(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(BoxReady, actor="system")
    step = trace.acted()
    assert folded(trace).last_used_ms == step.at_ms
    trace.add(TakeoverStarted, screen=0)
    person = trace.frame(actor="person")
    trace.add(BoxGone, actor="system", reason="idle", gap_ms=900_000)
    state = folded(trace)
    assert state.last_used_ms == person.at_ms
    assert state.last_seq == len(trace.entries) - 1


def test_a_screen_changing_by_itself_does_not_keep_a_box_in_use(trace: TraceBuilder) -> None:
    trace.created()
    step = trace.acted()
    trace.frame(actor="agent")
    trace.frame(actor="agent", name="g")
    assert folded(trace).last_used_ms == step.at_ms


def test_fork_names_its_source(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(ForkedFrom, source="box_src", up_to=40)
    assert folded(trace).forked_from == ForkOrigin(source="box_src", up_to=40)


def test_adopted_without_created_is_the_box_it_names(trace: TraceBuilder) -> None:
    spec = Spec(desktop=DesktopSpec(screens=2, width=1920, height=1080))
    adopted = trace.add(
        Adopted,
        actor="system",
        box_id="box_lost",
        runtime="docker",
        spec=spec,
        placement=Placement(idle_timeout_secs=600),
        spec_digest="sha256:x",
        expires_at_ms=123,
        owner="ws_a",
    )
    state = folded(trace)
    assert (state.id, state.runtime, state.state, state.adopted) == (
        "box_lost",
        "docker",
        "ready",
        True,
    )
    assert (state.spec, state.spec_digest, state.expires_at_ms) == (spec, "sha256:x", 123)
    assert (state.screens, state.width, state.height) == (2, 1920, 1080)
    assert state.idle_timeout_secs == 600 and state.owner == "ws_a"
    assert state.created_at_ms == adopted.at_ms


def test_adopted_knowing_nothing_gives_a_bare_box(trace: TraceBuilder) -> None:
    trace.add(Adopted, actor="system", box_id="box_bare", runtime="local")
    state = folded(trace)
    assert state.spec is None and state.placement is None and state.expires_at_ms is None
    assert (state.screens, state.width, state.height) == (1, 1280, 800)


def test_adopted_after_created_keeps_what_the_record_says(trace: TraceBuilder) -> None:
    created = trace.created(Spec(desktop=DesktopSpec(width=800, height=600)), owner="ws_a")
    trace.add(BoxReady)
    trace.add(BoxPaused)
    trace.add(
        Adopted,
        actor="system",
        box_id="box_test",
        runtime="local",
        spec=Spec(),
        expires_at_ms=1,
        owner="ws_other",
    )
    state = folded(trace)
    assert (state.state, state.adopted) == ("ready", True)
    assert (state.width, state.expires_at_ms, state.owner) == (800, created.expires_at_ms, "ws_a")


def test_a_trace_must_start_with_the_box(trace: TraceBuilder) -> None:
    trace.add(BoxReady)
    with pytest.raises(NotABoxTrace, match="box_created or adopted"):
        fold(trace.entries)


def test_a_box_is_created_once(trace: TraceBuilder) -> None:
    trace.created()
    trace.created()
    with pytest.raises(NotABoxTrace, match="again"):
        fold(trace.entries)


def test_server_entries_are_not_a_box(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(ImageBuilt, runtime="docker", image="i", spec_digest="d")
    with pytest.raises(NotABoxTrace, match="server trace"):
        fold(trace.entries)


def test_no_entries_no_box() -> None:
    assert fold([]) is None


def test_apply_leaves_the_state_it_was_given(trace: TraceBuilder) -> None:
    trace.created()
    before = folded(trace)
    copy = msgspec.structs.replace(before)
    apply(before, trace.add(BoxReady))
    assert before == copy


@given(box_trace(), st.data())
def test_fold_of_all_equals_fold_of_prefix_then_rest(
    entries: list[Entry], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(entries)))
    whole = fold(entries)
    state = fold(entries[:cut])
    for entry in entries[cut:]:
        state = apply(state, entry)
    assert state == whole
    assert fold(entries[cut:], fold(entries[:cut])) == whole


@settings(max_examples=300)
@given(box_trace(max_len=60), st.data())
def test_the_state_bearing_entries_of_a_prefix_fold_to_the_same_state(
    entries: list[Entry], data: st.DataObject
) -> None:
    # What a prune by age relies on: it keeps these of a trace's old prefix, and drops the rest.
    cut = data.draw(st.integers(0, len(entries) - 1))
    kept = state_bearing(entries[:cut])
    assert kept <= {entry.seq for entry in entries[:cut]}
    assert borne(fold([e for e in entries[:cut] if e.seq in kept] + entries[cut:])) == borne(
        fold(entries)
    )


def test_a_long_busy_trace_bears_its_state_in_a_few_entries(trace: TraceBuilder) -> None:
    trace.created(Spec(desktop=DesktopSpec(screens=2)))
    trace.add(BoxReady, actor="system", viewer_urls=["http://127.0.0.1/v/0"])
    for round in range(200):
        trace.acted(screen=round % 2)
        trace.frame(screen=round % 2, name=f"sha256:{round}")
        trace.add(TakeoverStarted, screen=round % 2, shared=False)
        trace.add(TakeoverEnded, screen=round % 2)
        trace.add(BoxPaused, actor="system")
        trace.add(BoxResumed, actor="system")
    trace.acted(screen=0)

    kept = state_bearing(trace.entries[:-1])

    # box_created, box_ready (its URLs), the last box_resumed, and the last frame and
    # takeover of each screen, the last of which is the last use too.
    assert len(kept) == 7
    kept_entries = [e for e in trace.entries if e.seq in kept] + trace.entries[-1:]
    assert borne(fold(kept_entries)) == borne(folded(trace))


@given(box_trace())
def test_fold_agrees_with_the_last_lifecycle_entry(entries: list[Entry]) -> None:
    state = fold(entries)
    assert state is not None
    lifecycle = [e for e in entries if type(e) in STATE_AFTER]
    assert state.state == STATE_AFTER[type(lifecycle[-1])]
    assert state.removed == isinstance(lifecycle[-1], BoxGone | BoxDeleted)
    assert state.adopted == any(isinstance(e, Adopted) for e in entries)
    assert state.last_seq == entries[-1].seq
    if isinstance(entries[0], BoxCreated):
        assert state.screens == entries[0].spec.desktop.screens
    assert len(state.frames) == len(state.held_by) == state.screens
