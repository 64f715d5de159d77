"""`holm diff`: two trace files offline, and two boxes of a real holmd (a source and its
fork made with `holm fork`)."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner, Result
from kits.holmd import Holmd
from PIL import Image
from replay_kit import DISPLAY_BASE, DISPLAY_COUNT, REPO, write_file_argv

from holm.cli import main
from holm.client import SyncHolmClient
from holm.wire.actions import OpenUrl, Press, Type, WaitStill

RECORDED = REPO / "fixtures" / "traces" / "recorded"


def holm_diff(*args: str) -> tuple[Result, dict[str, Any]]:
    result = CliRunner().invoke(main, ["diff", *args, "--json"])
    return result, json.loads(result.stdout) if result.stdout.strip() else {}


def test_a_trace_file_is_the_same_as_itself() -> None:
    trace_file = str(RECORDED / "browser_form.jsonl")

    result, report = holm_diff(trace_file, trace_file)

    assert result.exit_code == 0, result.stderr
    assert report["missing"] == report["extra"] == []
    assert report["matched"] > 0
    assert [f["pixels_equal"] for f in report["frames"]] == [True]


def test_two_different_runs_differ_in_steps_and_pixels() -> None:
    browser, xterm = RECORDED / "browser_form.jsonl", RECORDED / "xterm_session.jsonl"

    result, report = holm_diff(str(browser), str(xterm))
    text = CliRunner().invoke(main, ["diff", str(browser), str(xterm)])

    assert result.exit_code == 1
    assert report["missing"] and report["extra"]
    (frame,) = report["frames"]
    assert not frame["pixels_equal"] and 0 < frame["distance"] < 1
    changed = frame["changed"]
    assert changed["width"] > 0 and changed["height"] > 0
    assert "screen 0: distance" in text.stdout and "missing: A seq" in text.stdout


def test_a_fork_file_is_matched_to_its_source_file_by_box_id(tmp_path: Path) -> None:
    """Offline, A is a path; the fork's `forked_from` names A's box, which is what counts."""
    source = RECORDED / "browser_form.jsonl"
    lines = [json.loads(line) for line in source.read_text().splitlines()]
    up_to = 10
    created = {**lines[0], "box_id": "box_fork", "at_ms": lines[-1]["at_ms"] + 1}
    forked = {"kind": "forked_from", "seq": 1, "at_ms": created["at_ms"], "actor": "agent"}
    forked |= {"source": lines[0]["box_id"], "up_to": up_to}
    steps = [e for e in lines[1:] if e["seq"] <= up_to and e["kind"] in ("acted", "executed")]
    fork = tmp_path / "box_fork.jsonl"
    fork.write_text(
        "".join(
            json.dumps({**line, "seq": seq}) + "\n"
            for seq, line in enumerate([created, forked, *steps])
        )
    )

    result, report = holm_diff(str(source), str(fork))

    assert report["a_up_to"] == up_to, result.stdout
    # Steps past `up_to` are the source's own, not steps the fork lacks.
    assert report["missing"] == report["extra"] == []
    assert report["matched"] == len(steps)


def test_a_file_and_a_box_id_are_not_compared() -> None:
    result = CliRunner().invoke(main, ["diff", str(RECORDED / "exec_files.jsonl"), "box_x"])

    assert result.exit_code == 2
    assert "two trace files, or two box IDs" in result.stderr


def mismatch_told(client: SyncHolmClient, boxes: tuple[str, str], frame: dict[str, Any]) -> str:
    """What CI prints when a fork ends on other pixels than its source (a rare mismatch
    that no local run has reproduced, docs/fork.md): the comparison, the patch that differs
    in each last frame (a base64 PNG, 8 px around it), and each trace's last entries, with
    when each frame was seen."""
    told: dict[str, Any] = {"comparison": frame}
    changed = frame.get("changed") or {}
    for side, box in zip(("a", "b"), boxes, strict=True):
        entries = msgspec.to_builtins(client.trace(box).entries)
        told[f"{side} last entries"] = [
            {k: e.get(k) for k in ("seq", "at_ms", "kind", "frame") if k in e} for e in entries[-8:]
        ]
        if frame.get(side) and changed:
            with Image.open(io.BytesIO(client.trace_frame(box, frame[side]))) as picture:
                x, y = changed["x"], changed["y"]
                box_of_patch = (
                    max(0, x - 8),
                    max(0, y - 8),
                    min(picture.width, x + changed["width"] + 8),
                    min(picture.height, y + changed["height"] + 8),
                )
                patch = io.BytesIO()
                picture.crop(box_of_patch).save(patch, "PNG")
            told[f"{side} patch at {box_of_patch}"] = base64.b64encode(patch.getvalue()).decode()
    return json.dumps(told)


@pytest.fixture
def holmd(state_dir: Path) -> Iterator[Holmd]:
    # No token: `holm diff --url` sends none; the server listens on loopback.
    served = Holmd(
        state_dir,
        token=None,
        display_base=DISPLAY_BASE,
        display_count=DISPLAY_COUNT,
        HOLM_SERVER_AUTH="none",
    )
    served.start()
    yield served
    served.close()


@pytest.mark.desktop
def test_a_box_and_its_fork_through_holmd_are_the_same(holmd: Holmd) -> None:
    client = SyncHolmClient(holmd.url)
    made: list[str] = []
    try:
        source = client.create_box().id
        made.append(source)
        page = "<title>t</title><style>* { caret-color: transparent }</style><h1>Hi</h1><input>"
        client.exec(source, write_file_argv("/tmp/p.html", page))
        client.act(
            source,
            [
                OpenUrl(url="file:///tmp/p.html"),
                OpenUrl(url="file:///tmp/p.html#x"),
                WaitStill(settle_ms=300),
                Press(chord=["Tab"]),
                Type(text="typed"),
                WaitStill(settle_ms=300),
            ],
        )
        forked = CliRunner().invoke(main, ["fork", source, "--url", holmd.url])
        assert forked.exit_code == 0, forked.stderr
        fork = forked.stdout.strip().splitlines()[-1]
        made.append(fork)

        result, report = holm_diff(source, fork, "--url", holmd.url)

        assert (report["a"], report["b"], report["matched"]) == (source, fork, 7)
        assert report["missing"] == report["extra"] == []
        # The source's last frame is the watcher's, the fork's its final capture: the same
        # pixels, which is what `holm diff` asks for by default.
        (frame,) = report["frames"]
        assert frame["pixels_equal"], mismatch_told(client, (source, fork), frame)
        assert result.exit_code == 0
    finally:
        for box in made:
            client.delete_box(box)
        client.close()
