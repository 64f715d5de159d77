"""An unchanged frame of a screen known to be still is answered by the engine without asking
the desktop (holm/engine/still_screens.py), and only while nothing can have changed: a
drawing in the box told by the desktop's count, or any action of the server, ends it. On the
in-memory runtime double, whose picture is its count of changes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from engine_kit import POLL_SECS

from holm.adapters.memory.runtime import MemoryDesktop, MemoryWorld
from holm.engine import Engine
from holm.wire.actions import Click
from holm.wire.api import ActionsRequest
from holm.wire.runtime import FrameResult
from holm.wire.spec import Placement, Spec
from holm.wire.values import Point


async def quiet_box(engine: Engine) -> str:
    """A box whose frame watcher is stopped, so that only the test asks for frames."""
    box = await engine.create_box(Spec(), Placement())
    await engine.watchers.stop(box.id)
    return box.id


def counted(desktop: MemoryDesktop) -> list[str | None]:
    """The `have` of every frame the desktop is asked for, from now on."""
    asked: list[str | None] = []
    frame: Callable[..., Awaitable[FrameResult]] = desktop.frame

    async def counting(screen: int, **options: Any) -> FrameResult:
        asked.append(options.get("have"))
        return await frame(screen, **options)

    desktop.frame = counting  # type: ignore[method-assign]
    return asked


async def until_changed(engine: Engine, box_id: str, have: str) -> FrameResult:
    """Ask (bounded) until the frame is no longer `have`; the test checks the answer."""
    for _ in range(100):
        frame = await engine.frame(box_id, 0, have=have)
        if not frame.unchanged:
            return frame
        await asyncio.sleep(POLL_SECS)
    return frame


async def test_a_still_screen_is_answered_without_asking_the_desktop(
    engine: Engine, world: MemoryWorld
) -> None:
    box_id = await quiet_box(engine)
    asked = counted(world.boxes[box_id].desktop)
    first = await engine.frame(box_id, 0)
    again = [await engine.frame(box_id, 0, have=first.hash) for _ in range(5)]
    assert all(f.unchanged and f.hash == first.hash for f in again)
    assert (again[0].width, again[0].height) == (first.width, first.height)
    # The first whole frame told the desktop's count; every `have` after it was known.
    assert asked == [None]
    # A region or a scale is always asked of the desktop.
    await engine.frame(box_id, 0, have=first.hash, scale=50)
    assert asked == [None, first.hash]


async def test_a_drawing_in_the_box_ends_what_was_known(engine: Engine, world: MemoryWorld) -> None:
    box_id = await quiet_box(engine)
    first = await engine.frame(box_id, 0)
    assert (await engine.frame(box_id, 0, have=first.hash)).unchanged
    # A program of the box draws: the server did nothing, the desktop's count tells.
    world.boxes[box_id].screens[0].changes.bump()
    changed = await until_changed(engine, box_id, first.hash)
    assert not changed.unchanged and changed.hash != first.hash


async def test_an_action_ends_what_was_known_before_it_is_answered(
    engine: Engine, world: MemoryWorld
) -> None:
    box_id = await quiet_box(engine)
    first = await engine.frame(box_id, 0)
    assert (await engine.frame(box_id, 0, have=first.hash)).unchanged
    asked = counted(world.boxes[box_id].desktop)
    await engine.run_batch(box_id, 0, ActionsRequest(actions=[Click(at=Point(x=3, y=4))]))
    # At once, not after the count reached the server: the click's frame is asked anew.
    after = await engine.frame(box_id, 0, have=first.hash)
    assert asked == [first.hash]
    assert not after.unchanged and after.hash != first.hash


async def test_a_frame_asked_before_an_action_is_not_kept_as_still(
    engine: Engine, world: MemoryWorld
) -> None:
    box_id = await quiet_box(engine)
    desktop = world.boxes[box_id].desktop
    first = await engine.frame(box_id, 0)
    frame = desktop.frame
    gate = asyncio.Event()

    async def slow(screen: int, **options: Any) -> FrameResult:
        answer = await frame(screen, **options)
        await gate.wait()
        return answer

    desktop.frame = slow  # type: ignore[method-assign]
    # Nothing known: the frame below is asked of the desktop.
    engine.watchers.nudge(box_id, 0)
    asking = asyncio.create_task(engine.frame(box_id, 0, have=first.hash))
    await asyncio.sleep(POLL_SECS)
    # The memory double's click draws nothing the old answer would miss, so the old
    # picture is what a wrong cache would keep.
    engine.watchers.nudge(box_id, 0)
    gate.set()
    assert (await asking).unchanged
    desktop.frame = frame  # type: ignore[method-assign]
    asked = counted(desktop)
    await engine.frame(box_id, 0, have=first.hash)
    assert asked == [first.hash]
