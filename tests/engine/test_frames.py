"""Frame watchers: a `frame` entry (with its PNG in the store) when a screen changed, none
while it is still, the actor who has the screen, and no watching while paused."""

from __future__ import annotations

import asyncio

from engine_kit import POLL_SECS, trace_of

from holm.engine import Engine
from holm.wire.actions import Click
from holm.wire.api import ActionsRequest
from holm.wire.entries import FrameSeen
from holm.wire.spec import DesktopSpec, Placement, Spec
from holm.wire.values import Point


async def frames_of(engine: Engine, box_id: str) -> list[FrameSeen]:
    return [e for e in await trace_of(engine, box_id) if isinstance(e, FrameSeen)]


async def until_frames(engine: Engine, box_id: str, count: int) -> list[FrameSeen]:
    """Wait (bounded) until the trace has `count` frames; the test then checks them."""
    for _ in range(500):
        frames = await frames_of(engine, box_id)
        if len(frames) >= count:
            return frames
        await asyncio.sleep(POLL_SECS)
    return await frames_of(engine, box_id)


async def test_a_frame_is_recorded_when_the_screen_changed_and_only_then(engine: Engine) -> None:
    box = await engine.create_box(Spec(desktop=DesktopSpec(width=320, height=200)), Placement())
    (first,) = await until_frames(engine, box.id, 1)
    assert (first.actor, first.screen, first.width, first.height) == ("agent", 0, 320, 200)
    png = await engine.trace_frame(box.id, first.frame)
    assert png.startswith(b"\x89PNG")
    # A still screen adds no entries, however long it is watched.
    await asyncio.sleep(POLL_SECS * 10)
    assert len(await frames_of(engine, box.id)) == 1
    await engine.run_batch(box.id, 0, ActionsRequest(actions=[Click(at=Point(x=3, y=4))]))
    frames = await until_frames(engine, box.id, 2)
    assert len(frames) == 2 and frames[1].frame != first.frame
    assert (await engine.box(box.id)).frames == (frames[1].frame,)


async def test_the_frame_actor_is_who_has_the_screen(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    await until_frames(engine, box.id, 1)
    await engine.take_over(box.id, 0)
    # A person's input is not seen by the server; here the test changes the screen.
    desktop = await engine.runtime_of(box.id).desktop(box.id)
    await desktop.act(0, Click(at=Point(x=9, y=9)))
    frames = await until_frames(engine, box.id, 2)
    assert [f.actor for f in frames] == ["agent", "person"]


async def test_no_frames_while_paused(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    await until_frames(engine, box.id, 1)
    await engine.pause_box(box.id)
    assert not engine.watchers.watching(box.id)
    await engine.resume_box(box.id)
    assert engine.watchers.watching(box.id)


async def test_a_box_that_goes_ends_its_trace_on_the_screen_it_ended_on(engine: Engine) -> None:
    goes = {
        "deleted": engine.delete_box,
        "stopped": engine.stop_box,
        "paused": engine.pause_box,
        "expired": lambda box_id: engine.remove(box_id, "expired"),
    }
    for how, go in goes.items():
        box = await engine.create_box(Spec(), Placement())
        await until_frames(engine, box.id, 1)
        # A change the watcher would look at only after its coalescing window.
        engine.watchers.coalesce_secs = 60.0
        await engine.run_batch(box.id, 0, ActionsRequest(actions=[Click(at=Point(x=5, y=6))]))
        desktop = await engine.runtime_of(box.id).desktop(box.id)
        ended_on, _, _ = await desktop.frame_hash(0)
        await go(box.id)
        frames = await frames_of(engine, box.id)
        assert frames[-1].frame == ended_on and len(frames) == 2, how
        engine.watchers.coalesce_secs = POLL_SECS
