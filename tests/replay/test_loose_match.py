"""The loose matcher is a pure function over entries: random recordings and random runs of
their steps (reordered, repeated, with steps the recording never had) are matched FIFO per
key, each recorded step at most once, and each match served as a mock exactly when the step
can change the desktop."""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from replay_kit import TraceBuilder

from holm.errors import ErrorBody
from holm.replay.loose import (
    LooseRun,
    RecordedCall,
    match_by_key,
    plan_loose,
    replay_loose,
    run_of_list,
    run_of_trace,
    side_effect_free,
    steps_of_trace,
)
from holm.wire.actions import (
    Action,
    Capture,
    Click,
    Clipboard,
    Launch,
    ListFiles,
    ReadFile,
    Type,
    WaitStill,
    Windows,
    WriteFile,
    WriteWhat,
)
from holm.wire.api import Outcome
from holm.wire.entries import Acted, ClipboardSet, Entry, FileWritten
from holm.wire.values import Point

# A few keys, so that runs repeat them and reuse them out of order.
KEYS = ["sha256:a", "sha256:b", "sha256:c", "sha256:d"]
OK = Outcome(ok=True)


def calls(keys: list[str]) -> list[RecordedCall]:
    return [
        RecordedCall(seq=seq, kind="acted", key=key, screen=0, action=Type(text="a"), outcome=OK)
        for seq, key in enumerate(keys)
    ]


key_lists = st.lists(st.sampled_from(KEYS), max_size=12)


@given(recorded=key_lists, run=key_lists)
def test_the_nth_step_of_a_key_gets_the_nth_recorded_step_of_that_key(
    recorded: list[str], run: list[str]
) -> None:
    matches = match_by_key(calls(recorded), calls(run))

    seen: Counter[str] = Counter()
    for step, match in zip(calls(run), matches, strict=True):
        of_key = [s for s in calls(recorded) if s.key == step.key]
        rank = seen[step.key]
        seen[step.key] += 1
        if rank < len(of_key):
            assert match is not None and match.seq == of_key[rank].seq
        else:
            assert match is None


@given(recorded=key_lists, run=key_lists)
def test_no_recorded_step_serves_twice_and_a_miss_means_its_key_is_used_up(
    recorded: list[str], run: list[str]
) -> None:
    matches = match_by_key(calls(recorded), calls(run))

    used = [m.seq for m in matches if m is not None]
    assert len(used) == len(set(used))
    for key in KEYS:
        missed = sum(1 for k, m in zip(run, matches, strict=True) if k == key and m is None)
        assert missed == max(0, run.count(key) - recorded.count(key))


@given(recorded=key_lists, run=key_lists, data=st.data())
def test_steps_of_other_keys_moved_around_change_no_match(
    recorded: list[str], run: list[str], data: st.DataObject
) -> None:
    """FIFO per key: a step's match depends on its rank among its own key's steps only."""
    shuffled = data.draw(st.permutations(range(len(run))))
    # Each key's steps keep their order; the keys interleave as the shuffle has them.
    of_key = {key: deque(i for i, k in enumerate(run) if k == key) for key in KEYS}
    moved = [of_key[run[i]].popleft() for i in shuffled]
    before = match_by_key(calls(recorded), calls(run))
    after = match_by_key(calls(recorded), [calls(run)[i] for i in moved])

    assert [before[i] for i in moved] == after


# Plans over real entries

ACTIONS: list[Action] = [
    Click(at=Point(x=10, y=20)),
    Type(text="hello"),
    WriteFile(what=WriteWhat(path="/tmp/a.txt", contents_base64="")),
    Clipboard(text=""),
    Capture(),
    Windows(),
    ReadFile(path="/etc/hostname"),
    ListFiles(path="/tmp"),
    WaitStill(),
    Clipboard(),
]


@st.composite
def recordings(draw: st.DrawFn) -> list[Entry]:
    trace = TraceBuilder()
    trace.created()
    for _ in range(draw(st.integers(0, 10))):
        trace.acted(
            draw(st.sampled_from(ACTIONS)),
            ok=draw(st.booleans()),
            actor=draw(st.sampled_from(["agent", "agent", "person"])),
        )
    trace.executed(["ls", "/tmp"], stdout="a\n")
    return trace.entries


@given(recorded=recordings())
def test_a_trace_replayed_against_itself_is_each_step_served_by_itself(
    recorded: list[Entry],
) -> None:
    plan = plan_loose(recorded, run_of_trace(recorded))
    report = asyncio.run(replay_loose(plan))

    agents = [e for e in recorded if isinstance(e, Acted) and e.actor == "agent"]
    assert [(s.seq, s.recorded) for s in report.matched][:-1] == [(e.seq, e.seq) for e in agents]
    assert report.missed == []
    for step, entry in zip(report.matched[:-1], agents, strict=True):
        assert step.mocked is not side_effect_free(entry.action)
        if step.mocked:
            assert step.outcome == Outcome(ok=entry.ok, error=entry.error)
        else:
            # Nothing to run it on.
            assert step.outcome is None
    ran = report.matched[-1]
    assert ran.type == "exec" and ran.mocked and ran.outcome is not None
    assert ran.outcome.exec is not None and ran.outcome.exec.stdout == "a\n"
    assert report.attempted == report.ok == sum(s.mocked for s in report.matched)


@given(recorded=recordings(), data=st.data())
def test_a_step_list_is_keyed_as_the_trace_recorded_its_steps(
    recorded: list[Entry], data: st.DataObject
) -> None:
    """A write's bytes are left out of its key, as the trace leaves them out of its entry."""
    agents = [e for e in recorded if isinstance(e, Acted) and e.actor == "agent"]
    picked = data.draw(st.lists(st.sampled_from(agents), max_size=6) if agents else st.just([]))
    written = WriteFile(what=WriteWhat(path="/tmp/a.txt", contents_base64="aGVsbG8="))
    actions = [written if isinstance(e.action, WriteFile) else e.action for e in picked]

    run = run_of_list(actions)

    assert [s.key for s in run.steps] == [e.key for e in picked]
    plan = plan_loose(recorded, run)
    assert all(s.recorded.key == s.step.key for s in plan.served)


def test_a_refusal_is_the_outcome_a_mock_serves() -> None:
    trace = TraceBuilder()
    trace.created()
    refused = trace.acted(Click(at=Point(x=1, y=2)), ok=False)

    (step,) = steps_of_trace(trace.entries)

    assert step.outcome == Outcome(
        ok=False, error=ErrorBody(code="failed", message="no such element")
    )
    assert step.key == refused.key


def test_a_launch_in_a_batch_serves_the_window_its_app_launched_entry_recorded() -> None:
    trace = TraceBuilder()
    trace.created()
    trace.acted(Launch(app="xterm"), batch="bat_1")

    (step,) = steps_of_trace(trace.entries)

    assert step.outcome == Outcome(ok=True, window="0x400001")


def test_writes_done_alone_have_no_key_and_are_listed_skipped() -> None:
    trace = TraceBuilder()
    trace.created()
    file = trace.add(FileWritten, path="/tmp/a.txt", bytes=3)
    clip = trace.add(ClipboardSet, screen=0, selection="clipboard", bytes=3)

    run: Any = run_of_trace(trace.entries)

    assert isinstance(run, LooseRun) and run.steps == []
    assert [(s.seq, s.kind) for s in run.skipped] == [
        (file.seq, "file_written"),
        (clip.seq, "clipboard_set"),
    ]
    assert run.skipped[0].why.startswith("no key to match: the trace records that /tmp/a.txt")
