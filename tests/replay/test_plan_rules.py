"""Each rule of what a fork does again, on hand-made traces (trace-and-fork.md)."""

from __future__ import annotations

from typing import Any

from holm.replay.plan import DoAction, DoExec, DoLaunch, ExpectedFrame, acted_key, plan_fork
from holm.wire.actions import (
    Click,
    Exec,
    ExecWhat,
    Launch,
    OnPage,
    OpenUrl,
    Type,
    WriteFile,
    WriteWhat,
)
from holm.wire.entries import (
    Adopted,
    AppLaunched,
    AppsInstalled,
    BoxDeleted,
    BoxPaused,
    BoxResumed,
    ClipboardRead,
    ClipboardSet,
    FileRead,
    FileWritten,
    PageCaptured,
    TakeoverEnded,
    TakeoverStarted,
    step_key,
)
from holm.wire.spec import DesktopSpec, Placement, Spec
from holm.wire.values import Point


def seqs(plan: Any) -> list[int]:
    return [s.seq for s in plan.steps]


def test_every_action_of_a_batch_is_done_again_page_actions_included(trace: Any) -> None:
    trace.created()
    a = trace.acted(OpenUrl(url="file:///tmp/form.html"), batch="b1", index=0)
    b = trace.acted(
        OnPage(what={"op": "fill", "query": "Name", "text": "Ada"}), batch="b1", index=1
    )
    c = trace.acted(OnPage(what={"op": "click", "query": "Send"}), batch="b1", index=2)

    plan = plan_fork(trace.entries)

    assert seqs(plan) == [a.seq, b.seq, c.seq]
    assert [s.do for s in plan.steps] == [
        DoAction(screen=0, action=a.action),
        DoAction(screen=0, action=b.action),
        DoAction(screen=0, action=c.action),
    ]
    assert [s.key for s in plan.steps] == [a.key, b.key, c.key]
    assert plan.skipped == []


def test_a_refused_action_is_not_done_again_and_not_listed(trace: Any) -> None:
    trace.created()
    good = trace.acted(Click(at=Point(x=1, y=2)), batch="b1", index=0)
    trace.acted(OnPage(what={"op": "click", "query": "Nope"}), ok=False, batch="b1", index=1)
    after = trace.acted(Type(text="hi"), batch="b2")

    plan = plan_fork(trace.entries)

    assert seqs(plan) == [good.seq, after.seq]
    assert plan.skipped == []


def test_executed_is_done_again_with_its_outcome_to_compare(trace: Any) -> None:
    trace.created()
    ran = trace.executed(["sh", "-c", "echo hi; exit 3"], code=3, stdout="hi\n")

    (step,) = plan_fork(trace.entries).steps

    assert step.seq == ran.seq and step.kind == "executed" and step.key == ran.key
    assert step.do == DoExec(argv=["sh", "-c", "echo hi; exit 3"], timeout_ms=10_000)
    assert step.expect.exec is not None
    assert (step.expect.exec.code, step.expect.exec.stdout) == (3, "hi\n")
    assert not step.expect.exec.succeeded


def test_an_exec_action_in_a_batch_keeps_its_result_to_compare(trace: Any) -> None:
    trace.created()
    trace.acted(
        Exec(what=ExecWhat(argv=["true"])),
        batch="b1",
        result={"code": 0, "stdout": "", "stderr": "", "timed_out": False},
    )

    (step,) = plan_fork(trace.entries).steps

    assert step.expect.exec is not None and step.expect.exec.succeeded


def test_a_launch_from_a_batch_is_done_once_through_its_acted_entry(trace: Any) -> None:
    trace.created()
    launched = trace.acted(Launch(app="xterm"), batch="b1")
    assert isinstance(trace.entries[-1], AppLaunched)

    plan = plan_fork(trace.entries)

    assert seqs(plan) == [launched.seq]
    assert plan.steps[0].kind == "acted"


def test_a_launch_outside_a_batch_is_done_again_keyed_like_an_acted_launch(trace: Any) -> None:
    trace.created()
    launched = trace.add(
        AppLaunched, screen=1, app="mousepad", key=step_key("app_launched", {}), args=["/tmp/a"]
    )

    (step,) = plan_fork(trace.entries).steps

    assert step.seq == launched.seq and step.kind == "app_launched"
    assert step.do == DoLaunch(screen=1, app="mousepad", args=["/tmp/a"])
    assert step.key == acted_key(1, Launch(app="mousepad", args=["/tmp/a"]))


def test_file_writes_and_clipboard_sets_are_skipped_naming_what(trace: Any) -> None:
    trace.created()
    wrote = trace.add(FileWritten, path="/tmp/marker.txt", bytes=12)
    clip = trace.add(ClipboardSet, screen=0, selection="primary", bytes=5)

    plan = plan_fork(trace.entries)

    assert plan.steps == []
    assert [(s.seq, s.kind, s.why) for s in plan.skipped] == [
        (
            wrote.seq,
            "file_written",
            "the trace records that /tmp/marker.txt was written, not what went into it",
        ),
        (
            clip.seq,
            "clipboard_set",
            "the trace records that the primary selection of screen 0 was set, not its text",
        ),
    ]


def test_installs_frames_reads_and_lifecycle_are_neither_done_nor_listed(trace: Any) -> None:
    trace.created()
    trace.add(AppsInstalled, apps=["gimp"])
    trace.frame("f1")
    trace.add(FileRead, path="/etc/hostname", bytes=4)
    trace.add(ClipboardRead, screen=0, selection="clipboard", bytes=3)
    trace.add(PageCaptured, format="png", bytes=1000, screen=0)
    trace.add(BoxPaused)
    trace.add(BoxResumed)
    trace.add(BoxDeleted)

    plan = plan_fork(trace.entries)

    assert plan.steps == [] and plan.skipped == []


def test_what_a_person_did_is_not_done_again(trace: Any) -> None:
    trace.created()
    before = trace.acted(Click(at=Point(x=5, y=5)))
    trace.add(TakeoverStarted, screen=0)
    trace.frame("person-changed-it", actor="person")
    person = trace.acted(Click(at=Point(x=9, y=9)), actor="person")
    trace.add(FileWritten, actor="person", path="/tmp/p", bytes=1)
    trace.add(TakeoverEnded, screen=0)
    after = trace.acted(Click(at=Point(x=7, y=7)))

    plan = plan_fork(trace.entries)

    assert seqs(plan) == [before.seq, after.seq]
    assert plan.skipped == []
    # Asked to, a fork does again the actions a person's viewer recorded, and only those.
    with_person = plan_fork(trace.entries, include_person=True)
    assert seqs(with_person) == [before.seq, person.seq, after.seq]
    assert with_person.skipped == []


def test_up_to_includes_the_step_with_that_seq(trace: Any) -> None:
    trace.created()
    first = trace.acted(Click(at=Point(x=1, y=1)))
    wrote = trace.add(FileWritten, path="/tmp/a", bytes=1)
    second = trace.acted(Click(at=Point(x=2, y=2)))
    trace.add(FileWritten, path="/tmp/b", bytes=1)
    trace.acted(Click(at=Point(x=3, y=3)))

    plan = plan_fork(trace.entries, up_to=second.seq)

    assert seqs(plan) == [first.seq, second.seq]
    assert [s.seq for s in plan.skipped] == [wrote.seq]
    assert plan.up_to == second.seq
    assert seqs(plan_fork(trace.entries, up_to=second.seq - 1)) == [first.seq]


def test_after_a_restart_only_what_follows_the_last_adoption_is_done(trace: Any) -> None:
    trace.created(Spec(desktop=DesktopSpec(width=800, height=600)))
    trace.acted(Click(at=Point(x=1, y=1)))
    trace.add(FileWritten, path="/tmp/before", bytes=1)
    trace.add(Adopted, box_id="box_source", runtime="local")
    trace.acted(Click(at=Point(x=2, y=2)))
    last_adoption = trace.add(Adopted, box_id="box_source", runtime="local")
    kept = trace.acted(Click(at=Point(x=3, y=3)))
    wrote = trace.add(FileWritten, path="/tmp/after", bytes=1)

    plan = plan_fork(trace.entries)

    assert seqs(plan) == [kept.seq]
    assert [s.seq for s in plan.skipped] == [wrote.seq]
    # The spec still comes from box_created; pacing starts at the adoption.
    assert plan.origin is not None
    assert plan.origin.spec.desktop.width == 800
    assert plan.origin.ready_at_ms == last_adoption.at_ms


def test_an_adoption_that_carries_the_spec_gives_it(trace: Any) -> None:
    spec = Spec(desktop=DesktopSpec(screens=2))
    trace.add(
        Adopted,
        gap_ms=0,
        box_id="box_lost",
        runtime="docker",
        spec=spec,
        placement=Placement(runtime="docker", memory="2g"),
    )
    step = trace.acted(Click(at=Point(x=2, y=2)), screen=1)

    plan = plan_fork(trace.entries)

    assert seqs(plan) == [step.seq]
    assert plan.origin is not None
    assert (plan.origin.runtime, plan.origin.spec, plan.origin.placement.memory) == (
        "docker",
        spec,
        "2g",
    )


def test_a_trace_without_spec_has_no_origin(trace: Any) -> None:
    trace.add(Adopted, gap_ms=0, box_id="box_x", runtime="local")
    trace.acted(Click(at=Point(x=2, y=2)))

    assert plan_fork(trace.entries).origin is None


def test_the_screen_a_batch_left_is_what_strict_mode_expects(trace: Any) -> None:
    trace.created()
    trace.acted(OpenUrl(url="file:///tmp/a.html"), batch="b1", index=0)
    trace.frame("loading")
    end = trace.acted(Type(text="x"), batch="b1", index=1)
    trace.frame("half", gap_ms=10)
    settled = trace.frame("typed", gap_ms=10)
    trace.frame("other-screen", screen=1)
    exec_step = trace.executed(["true"], gap_ms=1000)
    trace.frame("after-exec")
    last = trace.acted(Click(at=Point(x=1, y=1)), batch="b2")
    final = trace.frame("final")

    plan = plan_fork(trace.entries)
    by_seq = {s.seq: s for s in plan.steps}

    # Mid-batch steps have no frame to meet: the screen had no time to settle.
    assert by_seq[end.seq - 2].expect.frame is None
    assert by_seq[end.seq].expect.frame == ExpectedFrame(
        screen=0, seq=settled.seq, hash="typed", held_ms=exec_step.at_ms - settled.at_ms
    )
    assert by_seq[exec_step.seq].expect.frame is None
    assert by_seq[last.seq].expect.frame == ExpectedFrame(
        screen=0, seq=final.seq, hash="final", held_ms=None
    )
    assert by_seq[last.seq].expect.frame.settled()
    short = ExpectedFrame(screen=0, seq=1, hash="h", held_ms=20)
    assert not short.settled()


def test_the_expected_screen_is_the_one_before_a_person_took_it(trace: Any) -> None:
    trace.created()
    step = trace.acted(Click(at=Point(x=1, y=1)))
    before = trace.frame("before-takeover")
    taken = trace.add(TakeoverStarted, gap_ms=1000, screen=0)
    trace.frame("what-the-person-did", actor="person")
    trace.add(TakeoverEnded, screen=0)
    trace.acted(Click(at=Point(x=2, y=2)))

    expected = {s.seq: s for s in plan_fork(trace.entries).steps}[step.seq].expect.frame

    assert expected == ExpectedFrame(
        screen=0, seq=before.seq, hash="before-takeover", held_ms=taken.at_ms - before.at_ms
    )


def test_a_batch_of_commands_and_files_expects_no_screen(trace: Any) -> None:
    trace.created()
    trace.acted(WriteFile(what=WriteWhat(path="/tmp/a", contents_base64="YQ==")), batch="b1")
    files = trace.acted(Exec(what=ExecWhat(argv=["cat", "/tmp/a"])), batch="b1", index=1)
    trace.frame("chromium-still-starting")
    trace.acted(Exec(what=ExecWhat(argv=["true"])), batch="b2", gap_ms=1000)
    typed = trace.acted(Type(text="x"), batch="b2", index=1)
    trace.frame("typed")

    by_seq = {s.seq: s for s in plan_fork(trace.entries).steps}

    assert by_seq[files.seq].expect.frame is None
    assert by_seq[typed.seq].expect.frame is not None


def test_what_a_prune_dropped_is_listed_as_not_done_again(trace: Any) -> None:
    trace.created()
    for x in range(6):
        trace.acted(Click(at=Point(x=x, y=x)))
    # A prune by age kept the box's first entry and the last two steps (docs/storage.md).
    pruned = [trace.entries[0], *trace.entries[-2:]]

    plan = plan_fork(pruned)

    first, last = pruned[0].seq + 1, pruned[1].seq - 1
    assert seqs(plan) == [e.seq for e in pruned[1:]]
    assert [(s.seq, s.kind) for s in plan.skipped] == [(first, "pruned")]
    assert f"entries {first} to {last} were pruned" in plan.skipped[0].why
    assert plan_fork(trace.entries).skipped == []
