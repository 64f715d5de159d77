"""The pure comparisons: what a fork counts as a failure, what a strict replay counts as a
divergence, how two traces' steps align and how far apart two pictures are."""

from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image, ImageDraw

from holm.errors import ErrorBody
from holm.replay.diff import align_steps, compare_pngs, diff_traces
from holm.replay.plan import plan_fork
from holm.replay.strict import ForkPolicy, Outcome, StrictPolicy
from holm.wire.actions import Click, Type
from holm.wire.entries import ForkedFrom
from holm.wire.results import ExecResult
from holm.wire.values import Point


def exec_outcome(code: int | None, stdout: str = "", timed_out: bool = False) -> Outcome:
    return Outcome(
        ok=True, exec=ExecResult(code=code, stdout=stdout, stderr="", timed_out=timed_out)
    )


def test_a_refused_step_stops_both_a_fork_and_a_strict_replay(trace: Any) -> None:
    trace.created()
    trace.acted(Click(at=Point(x=1, y=1)))
    (step,) = plan_fork(trace.entries).steps
    refused = Outcome(ok=False, error=ErrorBody(code="failed", message="no window"))

    for policy in (ForkPolicy(), StrictPolicy()):
        divergence = policy.judge(step, refused)
        assert divergence is not None
        assert (divergence.seq, divergence.what) == (step.seq, "ok")
        assert divergence.actual["error"]["message"] == "no window"
        assert policy.judge(step, Outcome(ok=True)) is None


def test_a_fork_fails_a_command_only_when_it_succeeded_in_the_source(trace: Any) -> None:
    trace.created()
    trace.executed(["test", "-f", "/tmp/marker.txt"], code=0)
    trace.executed(["false"], code=1)
    passed, failed = plan_fork(trace.entries).steps
    policy = ForkPolicy()

    divergence = policy.judge(passed, exec_outcome(1))
    assert divergence is not None and divergence.what == "exec"
    assert divergence.expected == {"code": 0, "timed_out": False}
    assert divergence.actual == {"code": 1, "timed_out": False}
    assert policy.judge(passed, exec_outcome(None, timed_out=True)) is not None
    # Other output is a new run's business, and a command that failed before may fail again.
    assert policy.judge(passed, exec_outcome(0, stdout="different")) is None
    assert policy.judge(failed, exec_outcome(1)) is None


def test_strict_replay_compares_code_and_output(trace: Any) -> None:
    trace.created()
    trace.executed(["echo", "hi"], code=0, stdout="hi\n")
    (step,) = plan_fork(trace.entries).steps
    policy = StrictPolicy()

    assert policy.judge(step, exec_outcome(0, stdout="hi\n")) is None
    divergence = policy.judge(step, exec_outcome(0, stdout="ho\n"))
    assert divergence is not None
    assert divergence.expected["stdout"] == "hi\n" and divergence.actual["stdout"] == "ho\n"
    assert "seq 2 (exec)" in divergence.describe()
    assert policy.judge(step, exec_outcome(2, stdout="hi\n")) is not None


def test_the_frame_check_is_a_policy_that_can_be_turned_off(trace: Any) -> None:
    trace.created()
    trace.acted(Click(at=Point(x=1, y=1)))
    trace.frame("settled")
    trace.acted(Type(text="a"), gap_ms=1000)
    trace.frame("blink")
    trace.acted(Type(text="b"), gap_ms=100)
    settled, short, _ = plan_fork(trace.entries).steps

    assert StrictPolicy().frame_to_meet(settled) == settled.expect.frame
    assert StrictPolicy().frame_to_meet(short) is None
    assert StrictPolicy(settled_ms=50).frame_to_meet(short) == short.expect.frame
    assert StrictPolicy(compare_frames=False).frame_to_meet(settled) is None
    assert ForkPolicy().frame_to_meet(settled) is None


def test_steps_align_by_key_in_order(trace: Any) -> None:
    trace.created()
    a1 = trace.acted(Click(at=Point(x=1, y=1)))
    a2 = trace.acted(Type(text="lost"))
    a3 = trace.acted(Click(at=Point(x=3, y=3)))
    source = list(trace.entries)
    trace.entries.clear()
    trace.created()
    b1 = trace.acted(Click(at=Point(x=1, y=1)))
    b2 = trace.acted(Type(text="new"))
    b3 = trace.acted(Click(at=Point(x=3, y=3)))

    pairs, missing, extra = align_steps(plan_fork(source).steps, plan_fork(trace.entries).steps)

    assert [(p.a, p.b) for p in pairs] == [(a1.seq, b1.seq), (a3.seq, b3.seq)]
    assert [m.seq for m in missing] == [a2.seq]
    assert [e.seq for e in extra] == [b2.seq]


def png(size: tuple[int, int] = (64, 48), box: tuple[int, int, int, int] | None = None) -> bytes:
    image = Image.new("RGB", size, "white")
    if box is not None:
        ImageDraw.Draw(image).rectangle(box, fill="black")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def test_equal_pictures_are_zero_apart() -> None:
    assert compare_pngs(png(), png()) == (0.0, None)


def test_the_distance_is_the_mean_difference_and_the_region_bounds_it() -> None:
    distance, region = compare_pngs(png(), png(box=(10, 5, 19, 14)))

    assert region is not None
    assert (region.x, region.y, region.width, region.height) == (10, 5, 10, 10)
    assert distance == pytest.approx(100 / (64 * 48))


def test_pictures_of_two_sizes_are_as_far_apart_as_can_be() -> None:
    distance, region = compare_pngs(png((64, 48)), png((32, 48)))

    assert distance == 1.0
    assert region is not None and (region.width, region.height) == (64, 48)


async def test_a_fork_diff_reads_frames_and_ignores_steps_past_up_to(trace: Any) -> None:
    trace.created()
    kept = trace.acted(Click(at=Point(x=1, y=1)))
    trace.frame("src-final")
    trace.acted(Type(text="after up_to"))
    source = list(trace.entries)
    trace.entries.clear()
    trace.created()
    trace.add(ForkedFrom, source=source[0].box_id, up_to=kept.seq)
    trace.acted(Click(at=Point(x=1, y=1)))
    trace.frame("fork-final")
    fork = list(trace.entries)
    pictures = {"src-final": png(), "fork-final": png(box=(0, 0, 3, 3))}

    async def read_entries(box: str) -> Any:
        return source if box == "box_a" else fork

    async def read_frame(box: str, frame_hash: str) -> bytes | None:
        return pictures.get(frame_hash)

    diff = await diff_traces("box_a", "box_b", read_entries, read_frame)

    assert (diff.a_up_to, diff.matched, diff.missing, diff.extra) == (kept.seq, 1, [], [])
    (frame,) = diff.frames
    assert not frame.pixels_equal and frame.distance == pytest.approx(16 / (64 * 48))
    assert frame.changed is not None and (frame.changed.width, frame.changed.height) == (4, 4)
    assert not diff.same()
    assert diff.same(frame_tolerance=0.01)

    del pictures["fork-final"]
    (frame,) = (await diff_traces("box_a", "box_b", read_entries, read_frame)).frames
    assert frame.note == "the last frame of box_b is no longer kept"
