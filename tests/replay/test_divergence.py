"""Where two runs first part (holm/replay/divergence.py), on hand-made traces: each kind of
parting reported at its step, the first one first; runs that went the same way report none;
a fork is not blamed for the steps a fork never does again."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from typing import Any

from PIL import Image, ImageDraw
from replay_kit import TraceBuilder

from holm.replay.diff import diff_traces
from holm.wire.actions import Click, OpenUrl, Type, WriteFile, WriteWhat
from holm.wire.diff import TraceDiff
from holm.wire.entries import Entry, ForkedFrom
from holm.wire.values import Point


def png(box: tuple[int, int, int, int] | None = None) -> bytes:
    image = Image.new("RGB", (200, 100), "white")
    if box is not None:
        ImageDraw.Draw(image).rectangle(box, fill="black")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


PICTURES = {"blank": png(), "mark": png((50, 40, 59, 49)), "other": png((150, 10, 151, 11))}


def run(build: Callable[[TraceBuilder], None], box_id: str = "box_source") -> list[Entry]:
    trace = TraceBuilder()
    trace.created(box_id=box_id)
    build(trace)
    return list(trace.entries)


async def diff(a: list[Entry], b: list[Entry]) -> TraceDiff:
    runs = {"a": a, "b": b}

    async def read_entries(name: str) -> Any:
        return runs[name]

    async def read_frame(name: str, frame_hash: str) -> bytes | None:
        return PICTURES.get(frame_hash)

    return await diff_traces("a", "b", read_entries, read_frame)


def session(
    *,
    click_at: int = 10,
    second_code: int = 0,
    title: str = "Form",
    screen: str = "mark",
) -> Callable[[TraceBuilder], None]:
    """Open a page, click, run two commands, type: one thing changed at a time."""

    def build(trace: TraceBuilder) -> None:
        trace.acted(
            OpenUrl(url="file:///tmp/form.html?token=s3cret"),
            result={"page": {"url": "file:///tmp/form.html?…", "title": title}},
        )
        trace.frame("blank", gap_ms=400)
        trace.acted(Click(at=Point(x=click_at, y=10)), gap_ms=400)
        trace.frame(screen, gap_ms=50)
        trace.executed(["echo", "one"], stdout="one\n", gap_ms=500)
        trace.executed(["test", "-e", "/tmp/x"], code=second_code)
        trace.acted(Type(text="done"))

    return build


async def test_identical_runs_report_no_divergence() -> None:
    result = await diff(run(session()), run(session()))
    assert result.divergence is None and result.same()


async def test_a_click_at_another_place_is_the_first_divergence() -> None:
    a, b = run(session()), run(session(click_at=99))
    result = await diff(a, b)
    parted = result.divergence
    assert parted is not None and parted.kind == "missing"
    # The click, seq 4 in both (after the start, open_url and a frame); B did its own
    # click there instead.
    assert isinstance(a[4].action, Click) and (parted.a, parted.b) == (4, 4)
    assert parted.step == "click 10,10" and "B did click 99,10" in parted.message
    assert not result.same()


async def test_a_command_that_fails_in_one_run_only_is_reported_as_failed() -> None:
    a, b = run(session()), run(session(second_code=1))
    parted = (await diff(a, b)).divergence
    assert parted is not None and parted.kind == "failed"
    assert parted.step == "exec test -e /tmp/x" and parted.a == parted.b == 7
    assert parted.a_outcome["exec"]["code"] == 0 and parted.b_outcome["exec"]["code"] == 1
    assert "failed in B only" in parted.message


async def test_the_screen_after_a_step_differs_with_the_rectangle_and_crops() -> None:
    parted = (await diff(run(session()), run(session(screen="other")))).divergence
    assert parted is not None and parted.kind == "screen"
    assert parted.a == parted.b == 4 and parted.screen == 0
    assert parted.changed is not None and parted.crop is not None
    # The union of both marks, and a crop around it, inside the frame.
    assert (parted.changed.x, parted.changed.y) == (50, 10)
    assert (parted.changed.width, parted.changed.height) == (102, 40)
    assert parted.crop.x == 50 - 24 and parted.crop.x + parted.crop.width <= 200
    assert parted.distance is not None and parted.distance > 0
    assert parted.a_screen is not None and parted.b_screen is not None
    assert (parted.a_screen.frame, parted.b_screen.frame) == ("mark", "other")
    crop_a = Image.open(io.BytesIO(base64.b64decode(parted.a_screen.crop_png_base64 or "")))
    assert crop_a.size == (parted.crop.width, parted.crop.height)


async def test_a_page_that_ends_on_another_title_is_reported_as_page() -> None:
    parted = (await diff(run(session()), run(session(title="Error")))).divergence
    assert parted is not None and parted.kind == "page" and parted.a == parted.b == 2
    assert parted.a_page is not None and parted.b_page is not None
    assert (parted.a_page.title, parted.b_page.title) == ("Form", "Error")
    # The page as its entry keeps it: without the query, where a token may ride.
    assert parted.a_page.url == parted.b_page.url == "file:///tmp/form.html?…"


async def test_a_step_only_b_did_is_extra_and_a_frame_not_settled_is_not_compared() -> None:
    def longer(trace: TraceBuilder) -> None:
        session()(trace)
        trace.acted(Click(at=Point(x=1, y=1)))

    def hasty(trace: TraceBuilder) -> None:
        trace.acted(
            OpenUrl(url="file:///tmp/form.html?token=s3cret"),
            result={"page": {"url": "file:///tmp/form.html?…", "title": "Form"}},
        )
        trace.frame("blank", gap_ms=400)
        trace.acted(Click(at=Point(x=10, y=10)), gap_ms=400)
        # Another picture, but the next step came 100 ms later: maybe half drawn.
        trace.frame("other", gap_ms=50)
        trace.executed(["echo", "one"], stdout="one\n", gap_ms=100)
        trace.executed(["test", "-e", "/tmp/x"])
        trace.frame("mark")
        trace.acted(Type(text="done"), gap_ms=400)
        trace.acted(Click(at=Point(x=1, y=1)))

    parted = (await diff(run(session()), run(hasty))).divergence
    assert parted is not None and parted.kind == "extra"
    assert (parted.a, parted.b) == (None, 10) and parted.step == "click 1,1"
    assert (await diff(run(longer), run(session()))).divergence is not None


async def test_a_fork_is_not_blamed_for_what_a_fork_never_does() -> None:
    def source(trace: TraceBuilder) -> None:
        trace.acted(Click(at=Point(x=5, y=5)), ok=False)
        trace.acted(WriteFile(what=WriteWhat(path="/tmp/n.txt", contents_base64="")))
        trace.executed(["echo", "one"], stdout="one\n")

    def fork(trace: TraceBuilder) -> None:
        trace.add(ForkedFrom, source="box_source", up_to=None)
        trace.executed(["echo", "one"], stdout="one\n")

    a, b = run(source), run(fork, box_id="box_fork")
    assert (await diff(a, b)).divergence is None
    # Not a fork of A: the same B lacks A's refused click.
    b_alone = [e for e in b if not isinstance(e, ForkedFrom)]
    for n, entry in enumerate(b_alone):
        entry.seq = n
    parted = (await diff(a, b_alone)).divergence
    assert parted is not None and parted.kind == "missing" and parted.a == a[2].seq
