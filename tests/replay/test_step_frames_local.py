"""Every step has the screen it found, on a real local box (engine/step_frames.py): a step
sent before the frame watcher's coalescing window has passed still has a `frame` of the
screen it acted on right before its `acted` entry (and the trace page shows that frame
for it), and a step on a still screen records no frame of its own."""

from __future__ import annotations

import asyncio
import io
import itertools
import re
from typing import Any

import pytest
from PIL import Image

from holm.engine import Engine
from holm.projections.trace_html import trace_html
from holm.replay.reading import read_whole_trace
from holm.wire.actions import Click, Exec, ExecWhat, Move, OpenUrl, Type, WaitStill
from holm.wire.api import ActionsRequest
from holm.wire.entries import Acted, Entry, FrameSeen
from holm.wire.spec import Placement, Spec
from holm.wire.values import Point

pytestmark = pytest.mark.desktop

# A page of one colour, filling the window below Chromium's toolbar: its frame is told
# apart from about:blank's (white) by its pixels.
GREEN = (0, 160, 64)
PAGE = (
    "data:text/html,<title>green</title>"
    "<body style='margin:0;background:rgb(0,160,64)'><input autofocus></body>"
)
# Well below the toolbar, in the page.
IN_PAGE = (640, 600)
# The frame watcher's coalescing window, much longer than the pause between the steps: only
# the look before the step can record the loaded page in time.
COALESCE_SECS = 5.0


def frames_of(entries: list[Entry]) -> list[FrameSeen]:
    return [e for e in entries if isinstance(e, FrameSeen)]


async def png_of(engine: Engine, box_id: str, frame: FrameSeen) -> Image.Image:
    png = await engine.trace_frame(box_id, frame.frame)
    return Image.open(io.BytesIO(png)).convert("RGB")


async def until_watcher_frame(engine: Engine, box_id: str) -> list[Entry]:
    """The trace once the watcher has recorded the new box's first frame."""
    for _ in range(400):
        entries = await read_whole_trace(engine, box_id)
        if frames_of(entries):
            return entries
        await asyncio.sleep(0.05)
    raise AssertionError("the watcher recorded no frame of the new box")


async def test_a_step_sent_right_after_open_url_has_the_loaded_page_before_it(
    desktops: Any,
) -> None:
    engine = desktops.engine()
    engine.watchers.coalesce_secs = COALESCE_SECS
    box = (await engine.create_box(Spec(), Placement())).id
    await until_watcher_frame(engine, box)
    opened = await engine.run_batch(box, 0, ActionsRequest(actions=[OpenUrl(url=PAGE)]))
    assert opened.results[0].ok, opened.results
    await asyncio.sleep(0.1)
    typed = await engine.run_batch(box, 0, ActionsRequest(actions=[Type(text="hello")]))
    assert typed.results[0].ok, typed.results

    entries = await read_whole_trace(engine, box)
    steps = [e for e in entries if isinstance(e, Acted)]
    assert [type(s.action).__name__ for s in steps] == ["OpenUrl", "Type"]
    type_step = steps[1]
    before = entries[entries.index(type_step) - 1]
    assert isinstance(before, FrameSeen) and before.screen == 0
    # The frame before the `type` is the loaded page, not about:blank.
    picture = await png_of(engine, box, before)
    assert picture.getpixel(IN_PAGE) == GREEN
    # The trace page shows it for the `type` step ("the screen as step N saw it").
    page = trace_html("t", entries, lambda _: b"\x89PNG")
    row = re.search(rf'<div [^>]*data-seq="{type_step.seq}"[^>]*>', page)
    assert row is not None and f'data-frame-seq="{before.seq}"' in row.group(0)


async def test_a_step_on_a_still_screen_records_no_frame_of_its_own(desktops: Any) -> None:
    engine = desktops.engine()
    engine.watchers.coalesce_secs = COALESCE_SECS
    box = (await engine.create_box(Spec(), Placement())).id
    await until_watcher_frame(engine, box)
    # The pointer parked where it draws nothing the page shows, and the screen let settle;
    # then the watcher's own look (a box that goes is looked at last) records the screen.
    settle = ActionsRequest(actions=[Move(to=Point(x=5, y=700)), WaitStill(settle_ms=500)])
    await engine.run_batch(box, 0, settle)
    await engine.record_frame(box, 0)
    counted = len(frames_of(await read_whole_trace(engine, box)))

    # A command draws nothing on the screen; moves on an empty desktop area neither.
    for _ in range(3):
        await engine.run_batch(box, 0, ActionsRequest(actions=[Move(to=Point(x=6, y=700))]))
        await engine.run_batch(box, 0, ActionsRequest(actions=[Move(to=Point(x=5, y=700))]))
    exec_step = Exec(what=ExecWhat(argv=["true"], timeout_ms=5000))
    await engine.run_batch(box, 0, ActionsRequest(actions=[exec_step]))

    entries = await read_whole_trace(engine, box)
    assert len([e for e in entries if isinstance(e, Acted)]) == 2 + 6 + 1
    assert len(frames_of(entries)) == counted


async def test_a_step_on_a_changed_screen_records_its_frame_once(desktops: Any) -> None:
    engine = desktops.engine()
    engine.watchers.coalesce_secs = COALESCE_SECS
    box = (await engine.create_box(Spec(), Placement())).id
    await until_watcher_frame(engine, box)
    await engine.run_batch(
        box, 0, ActionsRequest(actions=[OpenUrl(url=PAGE), WaitStill(settle_ms=300)])
    )
    # Two clicks in one batch: the screen changed before the first (the page loaded), and
    # the second finds what the first did (if it drew anything) recorded or unchanged.
    clicks = [Click(at=Point(x=IN_PAGE[0], y=IN_PAGE[1])), Click(at=Point(x=700, y=650))]
    done = await engine.run_batch(box, 0, ActionsRequest(actions=clicks))
    assert all(r.ok for r in done.results)

    entries = await read_whole_trace(engine, box)
    first = next(e for e in entries if isinstance(e, Acted) and isinstance(e.action, Click))
    before = entries[entries.index(first) - 1]
    assert isinstance(before, FrameSeen)
    assert (await png_of(engine, box, before)).getpixel(IN_PAGE) == GREEN
    frames = frames_of(entries)
    # No frame is recorded twice in a row.
    assert all(a.frame != b.frame for a, b in itertools.pairwise(frames))
