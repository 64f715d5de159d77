"""The client against a real holmd with the local runtime: each call reaches its endpoint
and decodes its answer into the wire types, and error answers arrive as holm.errors."""

from __future__ import annotations

import asyncio
import base64
import io
import time
from collections.abc import Awaitable, Callable

import pytest
from e2e_kit import Holmd
from PIL import Image

from holm.client import HolmClient, SyncHolmClient
from holm.errors import BadRequest, Denied, Gone, NotFound, Unsupported
from holm.wire.actions import Action, Arrange, Launch, Move, Type, Wait
from holm.wire.api import ActionsRequest, FrameView
from holm.wire.computer_use import ImageBlock, TextBlock
from holm.wire.entries import BoxCreated, FrameSeen
from holm.wire.spec import DesktopSpec, Placement, Spec
from holm.wire.values import Point, Region

pytestmark = pytest.mark.desktop

UNCHANGED_TRIES = 10


def png_size(png: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(png)) as image:
        assert image.format == "PNG"
        return image.size


async def until_unchanged(
    capture: Callable[[str], Awaitable[FrameView | None]], have: str
) -> FrameView:
    """The first capture, given the hash of the one before, that says `unchanged`. The
    screen of a live desktop may change between two captures (a page still drawing on a
    busy machine), so a few are allowed; a server that never says `unchanged` fails."""
    for _ in range(UNCHANGED_TRIES):
        frame = await capture(have)
        assert frame is not None
        if frame.unchanged:
            assert frame.hash == have
            return frame
        assert frame.png_base64 is not None, "a changed frame comes with its image"
        have = frame.hash
        await asyncio.sleep(0.5)
    raise AssertionError(f"{UNCHANGED_TRIES} captures in a row said the screen changed")


async def test_health_answers_without_a_token(holmd: Holmd) -> None:
    async with HolmClient(holmd.url, token="") as anonymous:
        health = await anonymous.health()
        assert (health.ok, health.service) == (True, "holm-server")
        with pytest.raises(Denied):
            await anonymous.list_boxes()


async def test_a_box_is_created_once_per_idempotency_key_and_removed(client: HolmClient) -> None:
    spec = Spec(desktop=DesktopSpec(width=1024, height=640))
    placement = Placement(expires_after_secs=600)
    first = await client.create_box(spec, placement, idempotency_key="client-test-create")
    try:
        again = await client.create_box(spec, placement, idempotency_key="client-test-create")
        assert again.id == first.id
        assert first.state == "ready"
        assert (first.width, first.height) == (1024, 640)
        assert first.id in [box.id for box in await client.list_boxes()]
        assert (await client.get_box(first.id)).spec_digest == first.spec_digest
    finally:
        removed = await client.delete_box(first.id)
    assert removed.id == first.id
    with pytest.raises(Gone):
        await client.get_box(first.id)
    with pytest.raises(Gone):
        await client.delete_box(first.id)
    assert first.id not in [box.id for box in await client.list_boxes()]


async def test_a_batch_returns_the_cursor_and_frame_and_skips_an_unchanged_frame(
    client: HolmClient, box: str
) -> None:
    moved = await client.act(
        box,
        ActionsRequest(actions=[Move(to=Point(x=101, y=123))], want=["frame", "cursor"]),
    )
    assert moved.stopped_at is None
    assert [(step.type, step.ok) for step in moved.results] == [("move", True)]
    assert moved.cursor == Point(x=101, y=123)
    assert await client.cursor(box) == Point(x=101, y=123)
    assert moved.frame is not None and moved.frame.png_base64 is not None
    assert png_size(base64.b64decode(moved.frame.png_base64)) == (1280, 800)

    async def frame_after(have: str) -> FrameView | None:
        batch = ActionsRequest(actions=[Wait(ms=10)], want=["frame"], have_frame=have)
        return (await client.act(box, batch)).frame

    still = await until_unchanged(frame_after, moved.frame.hash)
    assert still.png_base64 is None


async def test_a_refused_step_stops_the_batch_unless_it_keeps_going(
    client: HolmClient, box: str
) -> None:
    steps: list[Action] = [Wait(ms=1), Launch(app="no-such-app"), Wait(ms=1)]
    stopped = await client.act(box, steps)
    assert stopped.stopped_at == 1
    assert [step.ok for step in stopped.results] == [True, False]
    assert stopped.results[1].error is not None

    went_on = await client.act(box, ActionsRequest(actions=steps, keep_going=True))
    assert [step.ok for step in went_on.results] == [True, False, True]


async def test_the_computer_use_formats_answer_their_tool_results(
    client: HolmClient, box: str
) -> None:
    moved = await client.computer_anthropic(
        box, {"action": "mouse_move", "coordinate": [512.4, 320]}, display=(1024, 640)
    )
    assert [step.type for step in moved.steps] == ["move"] and not moved.is_error
    image = moved.content[-1]
    assert isinstance(image, ImageBlock) and image.source.media_type == "image/png"
    assert png_size(base64.b64decode(image.source.data)) == (1024, 640)
    # The model's point, scaled to the 1280×800 screen (640.5 is rounded up) and back.
    where = await client.computer_anthropic(box, {"action": "cursor_position"}, display=(1024, 640))
    assert where.content == [TextBlock(text="X=513,Y=320")]
    assert await client.cursor(box) == Point(x=641, y=400)
    shot = await client.computer_openai(box, {"type": "screenshot"}, format="jpeg", quality=50)
    assert shot.output.image_url.startswith("data:image/jpeg;base64,")


async def test_frames_capture_the_screen_a_region_and_say_when_unchanged(
    client: HolmClient, box: str
) -> None:
    whole = await client.frame(box)
    assert whole.png_base64 is not None
    assert png_size(base64.b64decode(whole.png_base64)) == (1280, 800)

    async def frame_after(have: str) -> FrameView:
        return await client.frame(box, have=have)

    same = await until_unchanged(frame_after, whole.hash)
    assert same.png_base64 is None
    part = await client.frame(box, region=Region(x=10, y=20, width=300, height=200))
    assert part.png_base64 is not None
    assert png_size(base64.b64decode(part.png_base64)) == (300, 200)
    with pytest.raises(NotFound):
        await client.frame(box, screen=3)


async def test_windows_list_the_browser(client: HolmClient, box: str) -> None:
    windows = await client.windows(box)
    assert windows, "Chromium's window"
    active = await client.active_window(box)
    assert active is None or active.id in {window.id for window in windows}


async def test_exec_files_and_clipboard(client: HolmClient, box: str) -> None:
    ran = await client.exec(box, ["sh", "-c", "echo hi; exit 4"])
    assert (ran.code, ran.stdout, ran.timed_out) == (4, "hi\n", False)

    written = await client.write_file(box, "/tmp/client/a.txt", b"needle in\nhay\n")
    assert written.size == 14
    assert await client.read_file(box, "/tmp/client/a.txt") == b"needle in\nhay\n"
    listing = await client.list_files(box, "/tmp/client")
    assert [(e.name, e.type, e.size) for e in listing.entries] == [("a.txt", "file", 14)]
    found = await client.grep(box, "needle", path="/tmp/client")
    assert [(m.path, m.line, m.text) for m in found.matches] == [
        ("/tmp/client/a.txt", 1, "needle in")
    ]
    assert (await client.glob(box, "*.txt", path="/tmp/client")).paths == ["/tmp/client/a.txt"]
    with pytest.raises(NotFound):
        await client.read_file(box, "/tmp/client/missing")

    await client.set_clipboard(box, "copied")
    assert await client.get_clipboard(box) == "copied"


async def test_the_trace_pages_and_serves_its_frames(client: HolmClient, box: str) -> None:
    await client.act(box, [Type(text="x")])
    first = await client.trace(box, limit=2)
    assert [entry.seq for entry in first.entries] == [0, 1]
    assert isinstance(first.entries[0], BoxCreated)
    assert first.more is True
    assert first.next == 1
    rest = await client.trace(box, after=first.next)
    assert rest.entries[0].seq == 2
    frames = [e for e in [*first.entries, *rest.entries] if isinstance(e, FrameSeen)]
    assert frames, "a frame entry"
    png = await client.trace_frame(box, frames[-1].frame)
    assert png_size(png) == (frames[-1].width, frames[-1].height)
    with pytest.raises(BadRequest):
        await client.trace(box, limit=501)


async def test_events_runtimes_and_jobs(client: HolmClient, box: str) -> None:
    page = await client.events(limit=1000)
    assert "box.created" in {event.kind for event in page.events if event.box_id == box}
    assert page.next >= max(event.seq for event in page.events)
    later = await client.events(after=page.next)
    assert all(event.seq > page.next for event in later.events)

    runtimes = await client.runtimes()
    assert [(r.name, r.default) for r in runtimes] == [("local", True)]
    assert (await client.runtime("local")).can.pause is True
    with pytest.raises(NotFound):
        await client.runtime("nowhere")

    assert (await client.reap()).removed == 0
    assert (await client.run_jobs()).ran == 0
    # Nothing is old enough to go: every box of this server is minutes old.
    pruned = await client.prune()
    assert (pruned.entries, pruned.boxes) == (0, 0)


async def test_images_on_a_server_whose_runtimes_build_none(client: HolmClient) -> None:
    # This server has only the local runtime, which runs the host's own programs.
    assert await client.images() == []
    with pytest.raises(Unsupported):
        await client.build_image("local", Spec())
    with pytest.raises(Unsupported):
        await client.images("local")
    with pytest.raises(NotFound):
        await client.images("nowhere")


async def test_the_catalog_and_an_application_s_window(client: HolmClient, box: str) -> None:
    assert {"chromium", "mousepad", "xterm"} <= set((await client.catalog()).apps)
    launched = await client.act(box, [Launch(app="xterm", args=["-title", "client test"])])
    assert launched.stopped_at is None
    window = await client.wait_window(box, title="client test", within_ms=10_000)
    assert window.class_.lower() == "xterm"
    await client.focus_window(box, window.id)
    active = await client.active_window(box)
    assert active is not None and active.id == window.id
    # Moved twice, 100 pixels apart: where the frame's border and title put the window's
    # own corner is the window manager's business, the distance between the two is not.
    first = await client.arrange_window(box, window.id, Arrange(how="at", to=Point(x=40, y=50)))
    again = await client.arrange_window(box, window.id, Arrange(how="at", to=Point(x=140, y=250)))
    assert first.window is not None and again.window is not None
    moved = (again.window.x - first.window.x, again.window.y - first.window.y)
    assert moved == (100, 200)
    await client.close_window(box, window.id)
    # A close asks the application to go (WM_DELETE_WINDOW); it goes in its own time.
    deadline = time.monotonic() + 10
    while window.id in {w.id for w in await client.windows(box)}:
        assert time.monotonic() < deadline, "xterm did not close"
        await asyncio.sleep(0.1)


async def test_a_fork_replays_up_to_a_seq_once_per_idempotency_key(
    client: HolmClient, holmd: Holmd
) -> None:
    source = (await client.create_box()).id
    forks: set[str] = set()
    try:
        await client.exec(source, ["touch", "/tmp/forked"])
        cut = (await client.trace(source)).entries[-1].seq
        await client.act(source, [Move(to=Point(x=5, y=5))])
        placement = Placement(expires_after_secs=900)
        for _ in range(2):
            result = await client.fork(
                source, up_to=cut, placement=placement, idempotency_key="client-test-fork"
            )
            forks.add(result.box.id)
        assert len(forks) == 1
        assert result.box.forked_from is not None
        assert (result.box.forked_from.source, result.box.forked_from.up_to) == (source, cut)
        assert result.box.placement.expires_after_secs == 900
        assert (result.replay.attempted, result.replay.ok, result.replay.stopped_at) == (1, 1, None)
        ran = await client.exec(result.box.id, ["test", "-e", "/tmp/forked"])
        assert ran.code == 0
        diff = await client.diff(source, result.box.id)
        assert (diff.a, diff.b, diff.a_up_to) == (source, result.box.id, cut)
        assert (diff.matched, diff.missing) == (1, [])
    finally:
        holmd.remove(source, *forks)


async def test_the_sync_client_works_inside_a_running_loop(holmd: Holmd, box: str) -> None:
    # A script in a notebook or an async test has a loop running in its thread already.
    asyncio.get_running_loop()
    with SyncHolmClient(holmd.url, holmd.token) as sync:
        assert sync.get_box(box).id == box
        assert sync.exec(box, ["true"]).code == 0
        assert sync.act(box, [Launch(app="no-such-app")]).stopped_at == 0
        with pytest.raises(NotFound):
            sync.get_box("box_0000000000000000000000000000dead")
