"""Creating, pausing, resuming, stopping and deleting boxes: the entries each records, in
order and with their actor, and the state the box projection derives from them."""

from __future__ import annotations

import pytest
from engine_kit import SERVER_ID, MakeEngine, kinds, run, trace_of, without_frames

from holm.adapters.memory.runtime import MemoryRuntime, MemoryWorld
from holm.engine import Engine
from holm.errors import (
    BadRequest,
    Denied,
    Failed,
    Gone,
    NotFound,
    ScreenUnavailable,
    Unavailable,
    Unsupported,
)
from holm.events import MemoryStore
from holm.wire.actions import Click, ReadFile, WriteFile, WriteWhat
from holm.wire.api import ActionsRequest
from holm.wire.entries import SERVER_TRACE, BoxCreated, BoxFailed, BoxReady, ForkedFrom, ImageBuilt
from holm.wire.results import FileData, expect
from holm.wire.runtime import BuiltImage, Started
from holm.wire.spec import DesktopSpec, Placement, Spec, spec_digest
from holm.wire.values import Point


class WatchingRuntime(MemoryRuntime):
    """Keeps what the trace held when the runtime was asked to start the box."""

    engine: Engine | None = None
    seen_at_create: list[str] | None = None

    async def create(
        self, box_id: str, spec: Spec, placement: Placement, *, owner: str | None = None
    ) -> Started:
        assert self.engine is not None
        self.seen_at_create = kinds(await trace_of(self.engine, box_id))
        return await super().create(box_id, spec, placement, owner=owner)


async def test_box_created_is_durable_before_the_runtime_starts_the_box(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    runtime = WatchingRuntime(server_id=SERVER_ID, world=world)
    engine = await make_engine(runtime=runtime)
    runtime.engine = engine
    spec = Spec(desktop=DesktopSpec(width=1024, height=768, screens=2))
    box = await engine.create_box(spec, Placement(expires_after_secs=600))
    assert runtime.seen_at_create == ["box_created"]
    entries = without_frames(await trace_of(engine, box.id))
    assert kinds(entries) == ["box_created", "box_ready"]
    created, ready = entries
    assert isinstance(created, BoxCreated) and isinstance(ready, BoxReady)
    assert created.actor == "agent" and ready.actor == "system"
    assert created.spec == spec and created.spec_digest == spec_digest(spec)
    # The placement keeps the runtime it landed on, so a fork lands there too.
    assert created.placement == Placement(runtime="memory", expires_after_secs=600)
    assert created.expires_at_ms - created.at_ms == 600_000
    assert ready.viewer_urls == [f"memory:{box.id}/0", f"memory:{box.id}/1"]
    assert (box.state, box.screens, box.width, box.height) == ("ready", 2, 1024, 768)


async def test_a_fork_records_forked_from_right_after_box_created(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement(), forked_from=("box_source", 7))
    entries = without_frames(await trace_of(engine, box.id))
    assert kinds(entries) == ["box_created", "forked_from", "box_ready"]
    assert entries[1] == ForkedFrom(
        seq=1, at_ms=entries[1].at_ms, actor="agent", source="box_source", up_to=7
    )
    assert box.forked_from is not None and box.forked_from.source == "box_source"


async def test_a_runtime_failure_is_recorded_as_box_failed_and_the_box_refuses_calls(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    runtime = MemoryRuntime(server_id=SERVER_ID, world=world)
    runtime.fail_create = "no display free"
    engine = await make_engine(runtime=runtime)
    with pytest.raises(Failed, match="no display free"):
        await engine.create_box(Spec(), Placement())
    (box,) = engine.boxes()
    entries = await trace_of(engine, box.id)
    assert kinds(entries) == ["box_created", "box_failed"]
    assert isinstance(entries[1], BoxFailed) and entries[1].why == "no display free"
    assert (box.state, box.reason) == ("failed", "no display free")
    with pytest.raises(Denied, match="failed to start"):
        await run(engine, box.id, "true")
    # A failed box stays until it is deleted.
    await engine.delete_box(box.id)
    assert engine.boxes() == []


@pytest.mark.parametrize(
    ("spec", "placement", "error", "message"),
    [
        (Spec(desktop=DesktopSpec(packages=["jq"])), Placement(), Unsupported, "packages"),
        (Spec(), Placement(memory="2g"), Unsupported, "memory limit"),
        (Spec(desktop=DesktopSpec(screens=9)), Placement(), BadRequest, "screens must be 1 to 8"),
        (Spec(), Placement(expires_after_secs=59), BadRequest, "at least 60"),
        (Spec(), Placement(idle_timeout_secs=10), BadRequest, "idle_timeout_secs"),
        (Spec(), Placement(runtime="cloud"), NotFound, "no runtime named 'cloud'"),
    ],
)
async def test_what_cannot_be_done_is_refused_before_anything_is_recorded(
    engine: Engine, spec: Spec, placement: Placement, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        await engine.create_box(spec, placement)
    assert await engine.store.traces() == []
    assert engine.boxes() == []


async def test_pause_resume_stop_start_and_delete(engine: Engine, world: MemoryWorld) -> None:
    box = await engine.create_box(Spec(), Placement(persistent=True))
    await engine.act(
        box.id, 0, WriteFile(what=WriteWhat(path="/home/box/a.txt", contents_base64="aGk="))
    )
    assert (await engine.pause_box(box.id)).state == "paused"
    assert world.boxes[box.id].state == "paused"
    batch = ActionsRequest(actions=[Click(at=Point(x=1, y=1))])
    with pytest.raises(ScreenUnavailable, match="paused"):
        await engine.run_batch(box.id, 0, batch)
    # Pausing a paused box changes nothing and records nothing.
    assert (await engine.pause_box(box.id)).state == "paused"
    assert (await engine.resume_box(box.id)).state == "ready"
    assert (await engine.stop_box(box.id)).state == "stopped"
    assert world.boxes[box.id].state == "stopped"
    resumed = await engine.resume_box(box.id)
    assert resumed.state == "ready"
    read = expect(await engine.act(box.id, 0, ReadFile(path="/home/box/a.txt")), FileData)
    assert read.contents_base64 == "aGk="
    deleted = await engine.delete_box(box.id)
    assert (deleted.state, deleted.removed, deleted.reason) == ("gone", True, "deleted")
    assert box.id not in world.boxes
    entries = await trace_of(engine, box.id)
    lifecycle = [
        (kind, e.actor)
        for kind, e in zip(kinds(entries), entries, strict=True)
        if kind not in ("frame", "file_written", "file_read")
    ]
    assert lifecycle == [
        ("box_created", "agent"),
        ("box_ready", "system"),
        ("box_paused", "agent"),
        ("box_resumed", "agent"),
        ("box_stopped", "agent"),
        ("box_started", "agent"),
        ("box_ready", "system"),
        ("box_deleted", "agent"),
    ]


async def test_a_takeover_is_handed_over_and_taken_back_by_the_agent(engine: Engine) -> None:
    """trace-and-fork.md reads `3  agent    screen 0 handed to a person` and `5  agent
    screen 0 taken back`: a client of the API hands the screen over and takes it back; the
    person is the actor of what happens while they have it."""
    box = await engine.create_box(Spec(), Placement())
    assert await engine.take_over(box.id, 0)
    assert (await engine.box(box.id)).held_by == ("person",)
    assert await engine.give_back(box.id, 0)
    entries = without_frames(await trace_of(engine, box.id))
    assert [(kind, e.actor) for kind, e in zip(kinds(entries), entries, strict=True)][-2:] == [
        ("takeover_started", "agent"),
        ("takeover_ended", "agent"),
    ]


async def test_a_removed_box_answers_gone_but_keeps_its_trace(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    await engine.delete_box(box.id)
    assert engine.boxes() == []
    with pytest.raises(Gone):
        await run(engine, box.id, "true")
    with pytest.raises(Gone):
        await engine.delete_box(box.id)
    with pytest.raises(Gone):
        await engine.resume_box(box.id)
    assert kinds(await trace_of(engine, box.id))[-1] == "box_deleted"
    with pytest.raises(NotFound):
        await engine.box("box_unknown")
    with pytest.raises(NotFound):
        await engine.read_trace("box_unknown")


async def test_apps_install_is_refused_and_records_nothing(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    before = await trace_of(engine, box.id)
    with pytest.raises(Unsupported, match="cannot install applications"):
        await engine.install_apps(box.id, ["xterm"])
    with pytest.raises(BadRequest, match="not in the catalog: gimpy"):
        await engine.install_apps(box.id, ["gimpy"])
    after = await trace_of(engine, box.id)
    assert [kind for kind in kinds(after[len(before) :]) if kind != "frame"] == []


async def test_resuming_a_paused_box_is_box_ready_in_the_events_feed(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    await engine.pause_box(box.id)
    await engine.resume_box(box.id)
    kinds_seen = [e.kind for e in engine.feed.events() if e.box_id == box.id]
    assert kinds_seen == ["box.created", "box.ready", "box.paused", "box.ready"]
    ready, again = [e for e in engine.feed.events() if e.kind == "box.ready"]
    assert again.data == ready.data


async def test_a_full_memory_store_refuses_a_create_rather_than_drop_a_live_box(
    engine: Engine,
) -> None:
    assert isinstance(engine.store, MemoryStore)
    engine.store.max_traces = 2
    first = await engine.create_box(Spec(), Placement())
    second = await engine.create_box(Spec(), Placement())
    with pytest.raises(Unavailable) as refused:
        await engine.create_box(Spec(), Placement())
    assert refused.value.retryable
    assert {b.id for b in engine.boxes()} == {first.id, second.id}
    assert kinds(await trace_of(engine, first.id))[0] == "box_created"
    # A removed box's trace makes room.
    await engine.delete_box(first.id)
    third = await engine.create_box(Spec(), Placement())
    assert {b.id for b in engine.boxes()} == {second.id, third.id}


async def test_stop_and_start_keep_the_files_of_a_box_that_is_not_persistent(
    engine: Engine,
) -> None:
    box = await engine.create_box(Spec(), Placement())
    await engine.act(
        box.id, 0, WriteFile(what=WriteWhat(path="/home/box/a.txt", contents_base64="aGk="))
    )
    await engine.stop_box(box.id)
    await engine.resume_box(box.id)
    read = expect(await engine.act(box.id, 0, ReadFile(path="/home/box/a.txt")), FileData)
    assert read.contents_base64 == "aGk="


class _BuildingRuntime(MemoryRuntime):
    """A runtime that builds an image on the way to its first box of a spec, as the docker
    runtime does, and says so in `Started.built`."""

    def __init__(self, world: MemoryWorld) -> None:
        super().__init__(server_id=SERVER_ID, world=world)
        self.images: set[str] = set()

    async def create(
        self, box_id: str, spec: Spec, placement: Placement, *, owner: str | None = None
    ) -> Started:
        started = await super().create(box_id, spec, placement, owner=owner)
        digest = spec_digest(spec)
        if digest not in self.images:
            self.images.add(digest)
            started.built = BuiltImage(image=f"holm-box:{digest[7:19]}", spec_digest=digest)
        return started


async def test_an_image_built_on_the_way_to_a_box_is_image_built(
    make_engine: MakeEngine, world: MemoryWorld
) -> None:
    engine = await make_engine(runtime=_BuildingRuntime(world))
    spec = Spec(desktop=DesktopSpec(width=1024, height=768))
    await engine.create_box(spec, Placement())
    await engine.create_box(spec, Placement())
    built = [e for e in engine.feed.events() if e.kind == "image.built"]
    assert [(e.runtime, e.data) for e in built] == [
        (
            "memory",
            {"image": f"holm-box:{spec_digest(spec)[7:19]}", "spec_digest": spec_digest(spec)},
        )
    ]
    (entry,) = await engine.store.read(SERVER_TRACE)
    assert isinstance(entry, ImageBuilt) and entry.actor == "system"
