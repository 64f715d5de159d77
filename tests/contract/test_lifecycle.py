"""The contract of a box's life, the same on every runtime (the in-memory double, the holm
runtime over another holmd, a local box, a docker box): what pause, resume, stop, start and
delete do to a box as its runtime lists it and to its desktop and files, what each step
refuses in a state that does not allow it, and a new runtime object (a restarted holmd)
finding the boxes of the last. What only one runtime can show (frozen processes, a container
kept, pasta) stays in its own tests (tests/local/, tests/docker/)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import pytest_asyncio
from desktop_kit import cursor, read_bytes, write_bytes
from runtime_kit import runtimes_named

from holm.adapters.base import Runtime
from holm.errors import BadRequest, Denied, NotFound, ScreenUnavailable
from holm.wire.actions import Click, Cursor
from holm.wire.spec import DesktopSpec, Placement, Spec
from holm.wire.values import Point

NewRuntime = Callable[[], Runtime]
KEPT = "/home/box/kept.txt"


RUNTIMES = [
    "memory",
    "holm",
    pytest.param("local", marks=pytest.mark.desktop),
    pytest.param("docker", marks=[pytest.mark.desktop, pytest.mark.docker]),
    pytest.param("remote_docker", marks=[pytest.mark.desktop, pytest.mark.docker]),
]


@pytest_asyncio.fixture(params=RUNTIMES)
async def new_runtime(request: pytest.FixtureRequest, state_dir: Path) -> AsyncIterator[NewRuntime]:
    """New runtime objects of the parameter's runtime over the same boxes (no Chromium:
    nothing here needs a page); every box they made is removed at the end."""
    name: str = request.param
    dockers = name in ("docker", "remote_docker")
    client = request.getfixturevalue("docker_client") if dockers else None
    remote = request.getfixturevalue("remote_docker_engine") if name == "remote_docker" else None
    server_id = f"contract-{uuid.uuid4().hex[:8]}"
    async with runtimes_named(name, state_dir, server_id, client, remote, chromium=False) as new:
        yield new


def new_id() -> str:
    return f"box_{uuid.uuid4().hex[:12]}"


async def state_of(runtime: Runtime, box_id: str) -> str | None:
    """The box's state as its runtime lists it; None when it does not list it."""
    return next((box.state for box in await runtime.list() if box.box_id == box_id), None)


async def test_a_paused_box_refuses_its_desktop_until_it_is_resumed(
    new_runtime: NewRuntime,
) -> None:
    runtime = new_runtime()
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement())
    await runtime.pause(box_id)
    assert await state_of(runtime, box_id) == "paused"
    with pytest.raises(ScreenUnavailable, match="is paused; resume it first"):
        await runtime.desktop(box_id)
    # Pausing again is not an error.
    await runtime.pause(box_id)
    await runtime.resume(box_id)
    assert await state_of(runtime, box_id) == "running"
    await (await runtime.desktop(box_id)).act(0, Cursor())


@pytest.mark.parametrize("persistent", [True, False])
async def test_a_box_keeps_its_files_across_stop_and_start(
    new_runtime: NewRuntime, persistent: bool
) -> None:
    # `stop` keeps a box's files whatever its placement; `persistent` is about a box that
    # ended without it (a crash, a host restarted), which each runtime's tests show.
    runtime = new_runtime()
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement(persistent=persistent))
    await write_bytes(await runtime.desktop(box_id), KEPT, b"still here")

    await runtime.stop(box_id)
    assert await state_of(runtime, box_id) == "stopped"
    with pytest.raises(ScreenUnavailable, match="is stopped; start it first"):
        await runtime.desktop(box_id)

    started = await runtime.start(box_id)
    assert len(started.viewer_urls) == 1
    assert await state_of(runtime, box_id) == "running"
    assert await read_bytes(await runtime.desktop(box_id), KEPT) == b"still here"


async def test_a_paused_box_can_be_stopped(new_runtime: NewRuntime) -> None:
    runtime = new_runtime()
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement())
    await runtime.pause(box_id)
    await runtime.stop(box_id)
    assert await state_of(runtime, box_id) == "stopped"
    await runtime.start(box_id)
    assert await state_of(runtime, box_id) == "running"


async def test_the_steps_a_state_does_not_allow_are_refused(new_runtime: NewRuntime) -> None:
    runtime = new_runtime()
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement())
    with pytest.raises(BadRequest, match="already has a box"):
        await runtime.create(box_id, Spec(), Placement())
    with pytest.raises(Denied):
        await runtime.start(box_id)
    await runtime.stop(box_id)
    with pytest.raises(Denied):
        await runtime.pause(box_id)
    with pytest.raises(Denied):
        await runtime.resume(box_id)
    # Stopping a stopped box is not an error.
    await runtime.stop(box_id)
    await runtime.start(box_id)
    with pytest.raises(Denied):
        await runtime.start(box_id)
    assert await state_of(runtime, box_id) == "running"


async def test_a_box_it_does_not_have_is_not_found(new_runtime: NewRuntime) -> None:
    runtime = new_runtime()
    box_id = new_id()
    for step in (runtime.pause, runtime.resume, runtime.stop, runtime.start, runtime.desktop):
        with pytest.raises(NotFound):
            await step(box_id)
    # Deleting what is not there is not an error: a retried delete succeeds.
    await runtime.delete(box_id)


async def test_delete_removes_the_box(new_runtime: NewRuntime) -> None:
    runtime = new_runtime()
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement(persistent=True))
    await runtime.delete(box_id)
    assert await state_of(runtime, box_id) is None
    with pytest.raises(NotFound):
        await runtime.desktop(box_id)
    await runtime.delete(box_id)


async def test_a_new_runtime_object_adopts_the_boxes_of_the_last(
    new_runtime: NewRuntime,
) -> None:
    first = new_runtime()
    box_id = new_id()
    spec = Spec(desktop=DesktopSpec(width=1024, height=768))
    placement = Placement(persistent=True)
    started = await first.create(box_id, spec, placement, owner="ws_acme")
    await (await first.desktop(box_id)).act(0, Click(at=Point(x=10, y=20)))
    await write_bytes(await first.desktop(box_id), KEPT, b"before")
    await first.close()

    # As after a restart of holmd: nothing in memory but what the runtime keeps.
    second = new_runtime()
    (listed,) = [box for box in await second.list() if box.box_id == box_id]
    assert (listed.state, listed.spec, listed.placement, listed.owner) == (
        "running",
        spec,
        placement,
        "ws_acme",
    )
    assert listed.server_id == first.server_id and listed.created_at_ms is not None
    # Where its desktop answers, for a server that adopts it without its trace.
    assert (listed.viewer_urls, listed.devtools_url) == (started.viewer_urls, started.devtools_url)
    desktop = await second.desktop(box_id)
    assert await cursor(desktop, 0) == Point(x=10, y=20)
    assert (await desktop.frame(0)).width == 1024
    assert await read_bytes(desktop, KEPT) == b"before"
    await second.pause(box_id)
    assert await state_of(second, box_id) == "paused"
    await second.resume(box_id)
    await second.stop(box_id)
    await second.start(box_id)
    assert await read_bytes(await second.desktop(box_id), KEPT) == b"before"
