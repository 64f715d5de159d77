"""The trace page in a real headless Chromium, from the file `holm trace view` writes and no
server: it lists every entry of a recorded trace, and choosing a step (a click, the arrow
keys) shows the screen as that step saw it, decoded at the frame's size."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest
from trace_page_kit import Chromium, chromium, click, needs_chromium, panel, run_holm

from holm.events.local import read_trace_file
from holm.wire.entries import Entry, FrameSeen, kind_of

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "traces" / "recorded"
# The virtual key codes of the arrows, as a keyboard sends them.
KEY_CODES = {"ArrowUp": 38, "ArrowDown": 40}

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module"), needs_chromium]
__all__ = ["chromium"]


def written_page(tmp: Path, name: str) -> Path:
    """The page of a recorded trace, as the `holm` command writes it (a process of its own),
    from a copy laid out as a state dir: traces/NAME.jsonl and frames/NAME/."""
    (tmp / "traces").mkdir()
    shutil.copy(RECORDED / f"{name}.jsonl", tmp / "traces" / f"{name}.jsonl")
    shutil.copytree(RECORDED / "frames" / name, tmp / "frames" / name)
    page = tmp / "page.html"
    run_holm("trace", "view", f"traces/{name}.jsonl", "-o", str(page), cwd=tmp)
    return page


def shown_frame(entries: list[Entry], chosen: Entry) -> FrameSeen:
    """The last frame on the chosen step's screen at or before it: what the page shows."""
    screen = getattr(chosen, "screen", None)
    seen = [
        e
        for e in entries[: entries.index(chosen) + 1]
        if isinstance(e, FrameSeen) and screen in (None, e.screen)
    ]
    return seen[-1]


@pytest.mark.parametrize("name", ["browser_form", "xterm_session"])
async def test_the_page_lists_every_entry_and_shows_the_frame_of_a_chosen_step(
    chromium: Chromium, tmp_path: Path, name: str
) -> None:
    page = written_page(tmp_path, name)
    entries = read_trace_file(RECORDED / f"{name}.jsonl").entries
    chromium.events.clear()
    await chromium.open(page.as_uri())

    listed = await chromium.evaluate(
        "[...document.querySelectorAll('#entries .row[data-seq]')]"
        ".map(row => [Number(row.dataset.seq), row.children[3].textContent])"
    )
    assert listed == [[e.seq, kind_of(e)] for e in entries]

    # A step that is not itself a frame, late in the trace: it shows the frame before it.
    chosen = next(e for e in reversed(entries) if not isinstance(e, FrameSeen))
    frame = shown_frame(entries, chosen)
    await click(chromium, f'.row[data-seq="{chosen.seq}"]')
    shown = await panel(chromium)
    png = (RECORDED / "frames" / name / f"{frame.frame}.png").read_bytes()
    assert shown["seq"] == chosen.seq and not shown["hidden"]
    assert (shown["width"], shown["height"]) == (frame.width, frame.height)
    assert shown["src"] == "data:image/png;base64," + base64.b64encode(png).decode()
    assert shown["img"]["width"] > 0
    assert f"step {chosen.seq}: the screen as step {frame.seq} saw it" == shown["caption"]

    # Nothing was fetched but the file itself: the frames are in it.
    fetched = {
        event["params"]["request"]["url"].split(":")[0]
        for event in chromium.events
        if event.get("method") == "Network.requestWillBeSent"
    }
    assert fetched <= {"file", "data"}


async def test_the_arrow_keys_step_through_the_entries(chromium: Chromium, tmp_path: Path) -> None:
    page = written_page(tmp_path, "browser_form")
    entries = read_trace_file(RECORDED / "browser_form.jsonl").entries
    await chromium.open(page.as_uri())
    frames = [e for e in entries if isinstance(e, FrameSeen)]
    first = entries.index(frames[0])
    await click(chromium, f'.row[data-seq="{entries[first - 1].seq}"]')
    before = await panel(chromium)
    assert before["hidden"] and "no frame kept" in before["caption"]

    for key, step in (("ArrowDown", first), ("ArrowDown", first + 1), ("ArrowUp", first)):
        for kind in ("rawKeyDown", "keyUp"):
            await chromium.call(
                "Input.dispatchKeyEvent",
                type=kind,
                key=key,
                code=key,
                windowsVirtualKeyCode=KEY_CODES[key],
            )
        shown = await panel(chromium)
        assert shown["seq"] == entries[step].seq
        frame = shown_frame(entries, entries[step])
        assert (shown["width"], shown["height"]) == (frame.width, frame.height)
