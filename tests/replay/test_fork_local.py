"""Forks of real local boxes, end to end through the engine: what is done again, what is
skipped, the pace and its caps, where a fork stops, and how close it comes to its source."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import msgspec
import pytest
from replay_kit import FORM, TraceBuilder, put_recorded, write_file_argv

from holm.engine import Engine
from holm.errors import Unsupported
from holm.replay import fork_box, fork_run
from holm.replay.diff import diff_boxes
from holm.replay.interpreter import record_final_frames
from holm.replay.reading import read_whole_trace
from holm.wire.actions import (
    Action,
    Clipboard,
    Evaluate,
    EvaluateWhat,
    Exec,
    ExecWhat,
    MouseDown,
    MouseUp,
    Move,
    OpenUrl,
    Press,
    Type,
    WaitStill,
    Windows,
    WriteFile,
    WriteWhat,
)
from holm.wire.api import ActionsRequest, ForkRequest
from holm.wire.entries import Executed, ForkedFrom, FrameSeen
from holm.wire.results import Evaluated, ExecResult, FileSaved, WindowList, expect
from holm.wire.spec import DesktopSpec, Placement, Spec
from holm.wire.values import Point

pytestmark = pytest.mark.desktop


# Two navigations, and the keyboard from the address bar, which has the focus after
# open_url: see scripts/record_fixtures.py for why.
FILL_FORM: list[Action] = [
    OpenUrl(url="file:///tmp/form.html"),
    OpenUrl(url="file:///tmp/form.html#order"),
    WaitStill(settle_ms=300),
    Press(chord=["Tab"]),
    Type(text="Ada"),
    Press(chord=["Tab"]),
    Type(text="Paris"),
    Press(chord=["Tab"]),
    Press(chord=["Return"]),
    WaitStill(settle_ms=300),
]


def kinds(entries: Any) -> list[str]:
    return [type(e).__struct_config__.tag for e in entries]


async def run(engine: Engine, box_id: str, *argv: str) -> ExecResult:
    """A command run on its own (recorded `executed`), as a REST `exec` runs one."""
    action = Exec(what=ExecWhat(argv=list(argv), timeout_ms=10_000))
    return expect(await engine.act(box_id, 0, action), ExecResult)


async def upload(engine: Engine, box_id: str, path: str, contents_base64: str) -> None:
    """A file written on its own (recorded `file_written`, without its bytes)."""
    action = WriteFile(what=WriteWhat(path=path, contents_base64=contents_base64))
    expect(await engine.act(box_id, 0, action), FileSaved)


# The same run on each display server: an X11 box, and a Wayland one (headless sway,
# Chromium on Wayland).
SERVERS = [
    pytest.param(Spec(), id="x11"),
    pytest.param(Spec(desktop=DesktopSpec(server="wayland")), id="wayland"),
]


@pytest.mark.parametrize("spec", SERVERS)
async def test_a_browser_run_forks_to_the_same_screen_skipping_what_it_cannot(
    desktops: Any, spec: Spec
) -> None:
    engine = desktops.engine()
    source = (await engine.create_box(spec, Placement())).id
    await run(engine, source, *write_file_argv("/tmp/form.html", FORM))
    batch = await engine.run_batch(source, 0, ActionsRequest(actions=FILL_FORM))
    assert all(r.ok for r in batch.results), batch.results
    await upload(engine, source, "/tmp/marker.txt", "c2VjcmV0IG1hcmtlcgo=")
    await engine.act(source, 0, Clipboard(selection="clipboard", text="a secret"))
    await record_final_frames(engine, source)
    recorded = await read_whole_trace(engine, source)
    wrote = next(e for e in recorded if type(e).__name__ == "FileWritten")
    clip = next(e for e in recorded if type(e).__name__ == "ClipboardSet")

    result = await fork_box(engine, source, {})

    fork = result.box.id
    assert result.box.state == "ready" and result.box.forked_from is not None
    assert (result.replay.attempted, result.replay.ok) == (1 + len(FILL_FORM),) * 2
    assert (result.replay.stopped_at, result.replay.truncated) == (None, False)
    assert [msgspec.to_builtins(s) for s in result.replay.skipped] == [
        {
            "seq": wrote.seq,
            "kind": "file_written",
            "why": "the trace records that /tmp/marker.txt was written, not what went into it",
        },
        {
            "seq": clip.seq,
            "kind": "clipboard_set",
            "why": "the trace records that the clipboard selection of screen 0 was set, "
            "not its text",
        },
    ]
    # The form was filled and sent in the fork too: the page put the greeting in its title.
    titles = [w.title for w in expect(await engine.act(fork, 0, Windows()), WindowList).windows]
    assert any("Hello Ada from Paris" in t for t in titles), titles
    forked = await read_whole_trace(engine, fork)
    assert kinds(forked)[:2] == ["box_created", "forked_from"]
    assert forked[1] == ForkedFrom(seq=1, at_ms=forked[1].at_ms, actor="agent", source=source)
    assert isinstance(forked[-1], FrameSeen)

    fidelity = await diff_boxes(engine, source, fork)

    assert (fidelity.matched, fidelity.missing, fidelity.extra) == (1 + len(FILL_FORM), [], [])
    (frame,) = fidelity.frames
    # To the pixel, Chromium's toolbar included (its window is maximised for that: on
    # Wayland too, through the relay that has sway tell it so, maximised_proxy.py).
    assert (frame.pixels_equal, frame.distance, frame.changed) == (True, 0.0, None), frame
    assert fidelity.same(), fidelity.divergence


TITLE = EvaluateWhat(expression="document.title")
# A page that says in its title whether the pointer moved over it with the left button down.
DRAG_PAGE = """<!doctype html><title>still</title>
<body style="margin:0;height:100vh" onmousemove="if (event.buttons & 1) document.title = 'dragged'">
</body>"""


async def page_title(engine: Engine, box_id: str, wanted: str, tries: int = 50) -> str:
    """The page's title once it is `wanted`, or as it is after `tries` looks: the page takes
    the input events after the batch that sent them has answered."""
    title = ""
    for _ in range(tries):
        title = expect(await engine.act(box_id, 0, Evaluate(what=TITLE)), Evaluated).value
        if title == wanted:
            break
        await asyncio.sleep(0.1)
    return title


async def test_a_button_held_down_within_a_batch_stays_down_in_the_fork(desktops: Any) -> None:
    """A batch's mouse_down, move and mouse_up drag in the source (the server releases a
    button "when the batch ends", not between its steps), so they drag in the fork too."""
    engine = desktops.engine()
    source = (await engine.create_box(Spec(), Placement())).id
    await run(engine, source, *write_file_argv("/tmp/drag.html", DRAG_PAGE))
    opened = [OpenUrl(url="file:///tmp/drag.html"), WaitStill(settle_ms=300)]
    await engine.run_batch(source, 0, ActionsRequest(actions=opened))
    drag: list[Action] = [
        MouseDown(at=Point(x=200, y=400)),
        Move(to=Point(x=600, y=400)),
        MouseUp(at=Point(x=600, y=400)),
    ]
    dragged = await engine.run_batch(source, 0, ActionsRequest(actions=drag))
    assert all(r.ok for r in dragged.results) and dragged.released == []
    assert await page_title(engine, source, "dragged") == "dragged"

    result = await fork_box(engine, source, {})

    assert (result.replay.attempted, result.replay.ok) == (6, 6), result.replay
    assert await page_title(engine, result.box.id, "dragged") == "dragged"


@pytest.mark.parametrize("name", ["browser_form", "xterm_session"])
async def test_a_fork_of_a_recorded_run_ends_on_its_pixels(desktops: Any, name: str) -> None:
    """A fork of a run recorded by another holm (scripts/record_fixtures.py, its own frame
    key: the hashes cannot match, the pictures are compared) ends on the same pixels, with
    the exact check a strict replay makes by default."""
    engine = desktops.engine()
    source = await put_recorded(engine, name)

    run = await fork_run(engine, source, ForkRequest())

    fidelity = await diff_boxes(engine, source, run.box.id)
    assert (fidelity.missing, fidelity.extra) == ([], [])
    (frame,) = fidelity.frames
    assert frame.a != frame.b
    assert (frame.pixels_equal, frame.distance, frame.changed) == (True, 0.0, None), frame
    assert fidelity.same(), fidelity.divergence


async def test_an_exec_run_forks_with_the_same_output_and_up_to_a_step(desktops: Any) -> None:
    engine = desktops.engine()
    source = (await engine.create_box(Spec(), Placement())).id
    await run(engine, source, "sh", "-c", "mkdir -p /tmp/w && echo 42 > /tmp/w/answer")
    await run(engine, source, "cat", "/tmp/w/answer")
    await run(engine, source, "sh", "-c", "echo $((6 * 7)); exit 3")
    recorded = [e for e in await read_whole_trace(engine, source) if isinstance(e, Executed)]

    whole = await fork_box(engine, source, ForkRequest())
    part = await fork_box(engine, source, ForkRequest(up_to=recorded[1].seq))

    assert (whole.replay.attempted, whole.replay.ok, whole.replay.stopped_at) == (3, 3, None)
    again = [e for e in await read_whole_trace(engine, whole.box.id) if isinstance(e, Executed)]
    assert [(e.argv, e.code, e.stdout) for e in again] == [
        (e.argv, e.code, e.stdout) for e in recorded
    ]
    assert again[1].stdout == "42\n" and again[2].code == 3
    assert (part.replay.attempted, part.replay.ok) == (2, 2)
    assert part.box.forked_from is not None and part.box.forked_from.up_to == recorded[1].seq
    partial = await diff_boxes(engine, source, part.box.id)
    assert (partial.a_up_to, partial.matched, partial.missing) == (recorded[1].seq, 2, [])


async def test_a_fork_stops_at_the_first_step_that_fails_and_its_box_stays(
    desktops: Any,
) -> None:
    engine = desktops.engine()
    source = (await engine.create_box(Spec(), Placement())).id
    await upload(engine, source, "/tmp/marker.txt", "bWFyawo=")
    checked = await run(engine, source, "test", "-f", "/tmp/marker.txt")
    assert checked.code == 0
    await run(engine, source, "echo", "after")
    check = next(e for e in await read_whole_trace(engine, source) if isinstance(e, Executed))

    result = await fork_box(engine, source, {})

    # The marker's bytes are not in the trace, so the check that passed before fails now.
    assert result.replay.stopped_at == check.seq
    assert (result.replay.attempted, result.replay.ok) == (1, 0)
    assert [s.kind for s in result.replay.skipped] == ["file_written"]
    assert (await engine.box(result.box.id)).state == "ready"
    ran = [e for e in await read_whole_trace(engine, result.box.id) if isinstance(e, Executed)]
    assert [(e.argv, e.code) for e in ran] == [(["test", "-f", "/tmp/marker.txt"], 1)]


def paced_source(box_id: str, gaps_ms: list[int]) -> TraceBuilder:
    """A source trace of `echo` commands with the given gaps before each, written as if it
    had happened: nobody waits for its 20-second pauses."""
    made = TraceBuilder(start_ms=int(time.time() * 1000) - 3_600_000)
    made.created(box_id=box_id)
    for n, gap in enumerate(gaps_ms):
        made.executed(["echo", str(n)], stdout=f"{n}\n", gap_ms=gap)
    return made


async def test_a_wait_between_two_steps_is_at_most_two_seconds(desktops: Any) -> None:
    engine = desktops.engine()
    assert engine.config.fork_wait_cap_ms == 2000
    source = paced_source("box_paced", [20_000, 20_000])
    await engine.journal.append("box_paced", source.entries)

    run = await fork_run(engine, "box_paced", ForkRequest())

    assert (run.report.attempted, run.report.ok) == (2, 2)
    assert run.timing.waits == [2.0, 2.0]
    ran = [e for e in await read_whole_trace(engine, run.box.id) if isinstance(e, Executed)]
    gap_ms = ran[1].at_ms - ran[0].at_ms
    assert 2000 <= gap_ms < 20_000


async def test_a_fork_is_truncated_when_it_runs_out_of_time(desktops: Any) -> None:
    engine = desktops.engine(fork_limit_secs=1)
    source = paced_source("box_slow", [100, 5_000, 5_000])
    await engine.journal.append("box_slow", source.entries)

    result = await fork_box(engine, "box_slow", {})

    assert result.replay.truncated
    assert (result.replay.attempted, result.replay.ok, result.replay.stopped_at) == (1, 1, None)
    assert result.box.state == "ready"


async def test_a_removed_box_forks_and_a_given_placement_replaces_its_own(
    desktops: Any,
) -> None:
    engine = desktops.engine()
    source = (
        await engine.create_box(Spec(), Placement(expires_after_secs=900, idle_timeout_secs=600))
    ).id
    await run(engine, source, "echo", "still here")
    await engine.delete_box(source)
    assert (await engine.box(source)).removed

    with pytest.raises(Unsupported):
        await fork_box(engine, source, {"mode": "snapshot"})
    result = await fork_box(engine, source, {"placement": {"expires_after_secs": 120}})

    assert (result.replay.attempted, result.replay.ok) == (1, 1)
    assert result.box.placement == Placement(runtime="local", expires_after_secs=120)
    assert result.box.expires_at_ms - result.box.created_at_ms <= 121_000
