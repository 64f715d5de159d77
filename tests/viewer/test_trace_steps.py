"""What the trace page shows of a chosen step, in a real headless Chromium: the action drawn
on the frame where the trace says it happened (scaled to the picture as drawn), what was
typed or pressed, a command's exit code and output as text, a person's rows shaded; a fork
beside its source, rows aligned as `holm diff` aligns them; and `holm trace view BOX` (and
`--with`) against a real holmd."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from e2e_kit import Holmd, memory_holmd
from trace_kit import TraceBuilder
from trace_page_kit import Chromium, chromium, click, needs_chromium, panel, run_holm

from holm.client import SyncHolmClient
from holm.events.codec import encode_entry
from holm.events.local import read_trace_file
from holm.wire.actions import Click, Drag, Press, Scroll, Type
from holm.wire.entries import (
    Acted,
    BoxReady,
    Executed,
    FrameSeen,
    TakeoverEnded,
    TakeoverStarted,
    kind_of,
)
from holm.wire.values import Point

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
PNGS = sorted((FIXTURES / "recorded" / "frames" / "browser_form").glob("*.png"))
SOURCE, FORK = "box_9cf78792a1b2", "box_b01dface0042"

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module"), needs_chromium]
__all__ = ["chromium"]


def written_trace(folder: Path) -> list[Any]:
    """A trace with one real 1280x800 frame, then each kind of drawn action, a command with
    output to escape and to clip, and a person's click during a takeover: written as a
    state dir holds it (traces/box_marks.jsonl, frames/box_marks/)."""
    png = PNGS[0]
    trace = TraceBuilder()
    trace.add(BoxReady, actor="system")
    trace.add(FrameSeen, screen=0, frame=png.stem, width=1280, height=800)
    for action in (
        Click(at=Point(x=640, y=81)),
        Drag(from_=Point(x=100, y=200), to=Point(x=900, y=600)),
        Scroll(at=Point(x=400, y=300), dy=3),
        Type(text="Ada Lovelace\n"),
        Press(chord=["ctrl", "l"]),
    ):
        trace.add(Acted, screen=0, action=action, ok=True, key=f"k{len(trace.entries)}")
    trace.add(
        Executed,
        argv=["sh", "-c", "exit 3"],
        code=3,
        timed_out=False,
        key="k7",
        stdout="<b>bold</b>\n",
        stderr="e" * 5000,
    )
    trace.add(TakeoverStarted, screen=0)
    trace.add(Acted, actor="person", screen=0, action=Click(at=Point(x=10, y=20)), ok=True, key="p")
    trace.add(TakeoverEnded, screen=0)
    (folder / "traces").mkdir()
    (folder / "traces" / "box_marks.jsonl").write_bytes(
        b"".join(encode_entry(entry) for entry in trace.entries)
    )
    (folder / "frames" / "box_marks").mkdir(parents=True)
    shutil.copy(png, folder / "frames" / "box_marks" / png.name)
    return trace.entries


def centre(mark: dict[str, Any]) -> tuple[float, float]:
    box = mark["box"]
    return box["left"] + box["width"] / 2, box["top"] + box["height"] / 2


def on_picture(shown: dict[str, Any], x: int, y: int) -> tuple[float, float]:
    """Where the frame's pixel (x, y) is drawn on the page."""
    img = shown["img"]
    return (
        img["left"] + x * img["width"] / shown["width"],
        img["top"] + y * img["height"] / shown["height"],
    )


def mark(shown: dict[str, Any], cls: str) -> dict[str, Any]:
    (found,) = [m for m in shown["marks"] if m["cls"] == cls]
    return found


def near(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return abs(a[0] - b[0]) < 1.5 and abs(a[1] - b[1]) < 1.5


async def test_a_chosen_step_shows_its_action_on_the_frame_and_its_output(
    chromium: Chromium, tmp_path: Path
) -> None:
    written = written_trace(tmp_path)
    page = tmp_path / "page.html"
    run_holm("trace", "view", "traces/box_marks.jsonl", "-o", str(page), cwd=tmp_path)
    await chromium.open(page.as_uri())

    # Opened, it shows the screen the trace ended on: its last entry is chosen.
    last = written[-1].seq
    shown = await panel(chromium)
    assert shown["seq"] == last and not shown["hidden"] and shown["width"] == 1280

    await click(chromium, '.row[data-seq="2"]')
    shown = await panel(chromium)
    assert (shown["seq"], shown["width"], shown["height"]) == (2, 1280, 800)
    # The picture is drawn smaller than the frame: the ring is where the click was, scaled.
    assert shown["img"]["width"] < 1280
    assert near(centre(mark(shown, "ring")), on_picture(shown, 640, 81))
    assert near(centre(mark(shown, "dot")), on_picture(shown, 640, 81))
    assert shown["say"] == "click 640,81" and shown["output"] is None

    await click(chromium, '.row[data-seq="3"]')
    shown = await panel(chromium)
    assert near(centre(mark(shown, "dot from")), on_picture(shown, 100, 200))
    assert near(centre(mark(shown, "ring to")), on_picture(shown, 900, 600))
    line = mark(shown, "line")["box"]
    assert near((line["left"], line["top"]), on_picture(shown, 100, 200))

    await click(chromium, '.row[data-seq="4"]')
    shown = await panel(chromium)
    assert near(centre(mark(shown, "ring")), on_picture(shown, 400, 300))
    # dy=3: the arrow goes down from the point, straight.
    arrow = mark(shown, "line")["box"]
    assert near((arrow["left"] + arrow["width"] / 2, arrow["top"]), on_picture(shown, 400, 300))
    assert arrow["height"] > 10

    await click(chromium, '.row[data-seq="5"]')
    shown = await panel(chromium)
    assert shown["say"] == 'type "Ada Lovelace\\n"' and shown["marks"] == []
    await click(chromium, '.row[data-seq="6"]')
    assert (await panel(chromium))["say"] == "press ctrl+l"

    await click(chromium, '.row[data-seq="7"]')
    shown = await panel(chromium)
    assert shown["caption"] == "step 7: the screen as step 1 saw it" and not shown["hidden"]
    output = shown["output"]
    assert output["ended"] == "exit code 3"
    # What the command wrote is text: its markup shows, no element is made of it.
    assert output["stdout"] == "<b>bold</b>\n" and output["stdout_elements"] == 0
    assert output["stderr"] == "e" * 4000
    assert output["notes"] == "stderr clipped: the first 4,000 of 5,000 characters"

    # The person's click is drawn too; their row is shaded apart from the agent's, and
    # the takeover's rows apart from both.
    await click(chromium, '.row[data-seq="9"]')
    assert near(centre(mark(await panel(chromium), "ring")), on_picture(shown, 10, 20))
    await click(chromium, '.row[data-seq="1"]')
    shades = await chromium.evaluate(
        "[2, 8, 9, 10].map((seq) => getComputedStyle("
        "document.querySelector(`.row[data-seq='${seq}']`)).backgroundColor)"
    )
    agent, taken_start, person, taken_end = shades
    assert agent == "rgba(0, 0, 0, 0)"
    assert len({agent, taken_start, person}) == 3 and taken_end == taken_start


def fork_and_source(folder: Path) -> None:
    """The golden fork and its source as a state dir holds them, named by box ID, a
    recorded 1280x800 picture kept for each of their frames."""
    (folder / "traces").mkdir()
    for name, fixture in ((SOURCE, "browser_takeover"), (FORK, "fork")):
        trace = folder / "traces" / f"{name}.jsonl"
        shutil.copy(FIXTURES / f"{fixture}.jsonl", trace)
        frames = folder / "frames" / name
        frames.mkdir(parents=True)
        seen = [e for e in read_trace_file(trace).entries if isinstance(e, FrameSeen)]
        for n, entry in enumerate(seen):
            shutil.copy(PNGS[n % len(PNGS)], frames / f"{entry.frame}.png")


async def sides(chromium: Chromium) -> list[list[int | None]]:
    """Each row of a side-by-side page: the seq of A's entry and of B's (None: none)."""
    rows = await chromium.evaluate(
        "[...document.querySelectorAll('#entries .row')].map((row) => [...row.children]"
        ".map((side) => side.dataset.seq === undefined ? null : Number(side.dataset.seq)))"
    )
    assert isinstance(rows, list)
    return rows


def assert_aligned(rows: list[list[int | None]], a: list[int], b: list[int], pairs: Any) -> None:
    """Each entry of both traces once, in order, and the rows with both sides the pairs."""
    assert [row[0] for row in rows if row[0] is not None] == a
    assert [row[1] for row in rows if row[1] is not None] == b
    assert [tuple(row) for row in rows if None not in row] == [(p.a, p.b) for p in pairs]


async def test_a_fork_beside_its_source_aligns_the_rows_as_holm_diff_does(
    chromium: Chromium, tmp_path: Path
) -> None:
    fork_and_source(tmp_path)
    a, b = (f"traces/{SOURCE}.jsonl", f"traces/{FORK}.jsonl")
    page = tmp_path / "pair.html"
    run_holm("trace", "view", b, "--with", a, "-o", str(page), cwd=tmp_path)
    # Exit 1: their last frames differ (the pictures kept for them are not theirs).
    diff = json.loads(run_holm("diff", a, b, "--json", cwd=tmp_path, exits=1))
    pairs = [type("Pair", (), pair) for pair in diff["pairs"]]
    await chromium.open(page.as_uri())

    entries_a = read_trace_file(tmp_path / a).entries
    entries_b = read_trace_file(tmp_path / b).entries
    rows = await sides(chromium)
    assert_aligned(rows, [e.seq for e in entries_a], [e.seq for e in entries_b], pairs)
    assert len(pairs) == 6

    # The click of both, on one row: both screens, the ring on each where it clicked.
    (clicked,) = [p for p in pairs if kind_of(entries_a[p.a]) == "acted" and p.a == 5]
    await click(chromium, f'.row.pair > .side[data-seq="{clicked.b}"]')
    for n, (name, seq, frame_seq) in enumerate(((SOURCE, 5, 4), (FORK, 6, 5))):
        shown = await panel(chromium, n)
        side = "AB"[n]
        assert (
            shown["caption"] == f"{side} {name}: step {seq}: the screen as step {frame_seq} saw it"
        )
        assert not shown["hidden"] and shown["width"] == 1280
        assert near(centre(mark(shown, "ring")), on_picture(shown, 640, 81))

    # Where the two first part, as `holm diff` says it: marked on its row, said above.
    parted = diff["divergence"]
    assert parted is not None
    marked = await chromium.evaluate(
        "[...document.querySelectorAll('.side.parted')].map((side) => "
        "[side.parentElement.firstElementChild === side ? 'a' : 'b', Number(side.dataset.seq)])"
    )
    wanted = [[name, parted[name]] for name in ("a", "b") if parted[name] is not None]
    assert sorted(marked) == sorted(wanted)
    # Opened afresh, the page shows that step first.
    await chromium.open(page.as_uri())
    chosen = await chromium.evaluate(
        "[...document.querySelectorAll('.row.chosen > .side')].map((s) => s.dataset.seq === "
        "undefined ? null : Number(s.dataset.seq))"
    )
    assert [seq for seq in chosen if seq is not None] == [seq for _, seq in wanted]
    said = await chromium.evaluate("document.querySelector('.sub').textContent")
    assert f"First divergence ({parted['kind']}, marked yellow): {parted['message']}" in said


server = memory_holmd


async def test_holm_trace_view_box_writes_the_page_the_server_serves(
    chromium: Chromium, server: Holmd, tmp_path: Path
) -> None:
    with SyncHolmClient(server.url, server.token) as client:
        source = client.create_box().id
        client.act(source, [Click(at=Point(x=10, y=20))])
        client.exec(source, ["echo", "made by <holm>"])
        fork = client.fork(source).box.id
        for box_id in (source, fork):
            client.stop_box(box_id)
        entries = {box_id: client.trace(box_id).entries for box_id in (source, fork)}
        diff = client.diff(source, fork)
    remote = ("--url", server.url, "--token", server.token)

    assert run_holm("trace", "view", source, *remote, cwd=tmp_path) == f"{source}.html\n"
    # A file is kept: the served page's "fork from here", and the grant it sends, are not
    # in it (a file's script could not call the server anyway).
    written = (tmp_path / f"{source}.html").read_text()
    assert 'id="fork"' not in written and "pg_" not in written and "connect-src" not in written
    await chromium.open((tmp_path / f"{source}.html").as_uri())
    listed = await chromium.evaluate(
        "[...document.querySelectorAll('#entries .row')]"
        ".map(row => [Number(row.dataset.seq), row.querySelector('.kind').textContent])"
    )
    assert listed == [[e.seq, kind_of(e)] for e in entries[source]]
    (ran,) = [e for e in entries[source] if isinstance(e, Executed)]
    await click(chromium, f'.row[data-seq="{ran.seq}"]')
    output = (await panel(chromium))["output"]
    assert output["ended"] == "exit code 0" and output["stdout"] == "made by <holm>\n"

    out = tmp_path / "pair.html"
    written = run_holm(
        "trace", "view", fork, "--with", source, "-o", str(out), *remote, cwd=tmp_path
    )
    assert written == f"{out}\n"
    await chromium.open(out.as_uri())
    rows = await sides(chromium)
    seqs = {box_id: [e.seq for e in entries[box_id]] for box_id in (source, fork)}
    assert_aligned(rows, seqs[source], seqs[fork], diff.pairs)
    assert len(diff.pairs) == 2


async def centre_of(chromium: Chromium, selector: str) -> tuple[float, float]:
    box = await chromium.evaluate(
        f"(() => {{ const r = document.querySelector({selector!r}).getBoundingClientRect();"
        " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
    )
    return box[0], box[1]


async def test_the_filmstrip_holds_each_kept_frame_and_a_drag_along_it_scrubs(
    chromium: Chromium, tmp_path: Path
) -> None:
    fork_and_source(tmp_path)
    page = tmp_path / "one.html"
    run_holm("trace", "view", f"traces/{SOURCE}.jsonl", "-o", str(page), cwd=tmp_path)
    await chromium.open(page.as_uri())
    entries = read_trace_file(tmp_path / "traces" / f"{SOURCE}.jsonl").entries
    frame_seqs = [e.seq for e in entries if isinstance(e, FrameSeen)]
    assert len(frame_seqs) >= 3
    thumbs = await chromium.evaluate(
        "(async () => Promise.all([...document.querySelectorAll('#strip .thumb')].map("
        "async (t) => { const img = t.querySelector('img'); await img.decode();"
        " return [Number(t.dataset.step), img.naturalWidth]; })))()"
    )
    assert [seq for seq, _ in thumbs] == frame_seqs
    assert {width for _, width in thumbs} == {1280}
    # Opened on the last entry, whose screen is the last frame's: that thumb is current.
    current = await chromium.evaluate(
        "[...document.querySelectorAll('#strip .thumb.current')].map((t) => Number(t.dataset.step))"
    )
    assert current == [frame_seqs[-1]]

    # A drag from the first thumb to the second scrubs: the second frame's step is chosen.
    await chromium.evaluate("document.getElementById('strip').scrollIntoView()")
    start = await centre_of(chromium, f'#strip .thumb[data-step="{frame_seqs[0]}"]')
    end = await centre_of(chromium, f'#strip .thumb[data-step="{frame_seqs[1]}"]')
    await chromium.call(
        "Input.dispatchMouseEvent",
        type="mousePressed",
        x=start[0],
        y=start[1],
        button="left",
        buttons=1,
        clickCount=1,
    )
    shown = await panel(chromium)
    assert shown["seq"] == frame_seqs[0]
    for n in range(1, 6):
        x = start[0] + (end[0] - start[0]) * n / 5
        await chromium.call(
            "Input.dispatchMouseEvent",
            type="mouseMoved",
            x=x,
            y=start[1],
            button="left",
            buttons=1,
        )
    shown = await panel(chromium)
    assert shown["seq"] == frame_seqs[1] and not shown["hidden"]
    assert shown["caption"] == f"step {frame_seqs[1]}: the screen as step {frame_seqs[1]} saw it"
    await chromium.call(
        "Input.dispatchMouseEvent",
        type="mouseReleased",
        x=end[0],
        y=end[1],
        button="left",
        buttons=0,
        clickCount=1,
    )
