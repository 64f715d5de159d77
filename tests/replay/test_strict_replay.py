"""`holm replay --strict` on the recorded fixtures, no server: each passes, and a copy whose
recording was edited reports where it diverges, with what was expected and what came."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner, Result
from PIL import Image
from replay_kit import DISPLAY_BASE, DISPLAY_COUNT, REPO

from holm.adapters.base import Runtime
from holm.adapters.local.runtime import LocalRuntime
from holm.cli import main
from holm.config import Config
from holm.events.codec import encode_entry
from holm.events.local import read_trace_file
from holm.replay.plan import plan_fork
from holm.wire.entries import Executed, FrameSeen

pytestmark = pytest.mark.desktop

RECORDED = REPO / "fixtures" / "traces" / "recorded"


@pytest.fixture(autouse=True)
def local_runtime_on_our_displays(monkeypatch: pytest.MonkeyPatch) -> None:
    """`holm replay` makes its runtimes as holmd does; here they use this test's displays."""

    def make_runtimes(config: Config, server_id: str | None) -> dict[str, Runtime]:
        runtime = LocalRuntime(
            config.state_dir / "boxes",
            server_id,
            display_base=DISPLAY_BASE,
            display_count=DISPLAY_COUNT,
        )
        return {"local": runtime}

    monkeypatch.setattr("holm.cli.replay_cmd.make_runtimes", make_runtimes)


def replay(*args: str) -> tuple[Result, dict[str, Any]]:
    result = CliRunner().invoke(main, ["replay", *args, "--json"])
    report = json.loads(result.stdout) if result.stdout.strip() else {}
    return result, report


@pytest.mark.parametrize("name", ["browser_form", "xterm_session", "exec_files"])
def test_a_recorded_fixture_replays_strictly(name: str) -> None:
    trace_file = RECORDED / f"{name}.jsonl"
    plan = plan_fork(read_trace_file(trace_file).entries)

    result, report = replay(str(trace_file), "--strict")

    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert report["steps"] == report["ok"] == len(plan.steps) > 0
    assert report["divergence"] is None and report["compare_frames"]
    assert report["skipped"] == msgspec.to_builtins(plan.skipped)
    # Each has a step a fork cannot do; exec_files has two (an upload, a batch's write).
    assert len(report["skipped"]) == (2 if name == "exec_files" else 1)
    assert not report["kept"]


def edited_copy(tmp_path: Path, name: str) -> tuple[Path, list[Any]]:
    """A copy of a recorded fixture, with its frames, to edit."""
    shutil.copytree(RECORDED / "frames" / name, tmp_path / "frames" / name)
    entries = read_trace_file(RECORDED / f"{name}.jsonl").entries
    return tmp_path / f"{name}.jsonl", entries


def write(path: Path, entries: list[Any]) -> None:
    path.write_bytes(b"".join(encode_entry(e) for e in entries))


def test_an_edited_output_is_reported_where_it_diverges(tmp_path: Path) -> None:
    path, entries = edited_copy(tmp_path, "exec_files")
    sums = [e for e in entries if isinstance(e, Executed) and "bc" in e.argv[-1]]
    (summed,) = sums
    assert summed.stdout == "15\n"
    entries[summed.seq] = msgspec.structs.replace(summed, stdout="16\n")
    write(path, entries)
    before = [e for e in plan_fork(entries).steps if e.seq < summed.seq]

    result, report = replay(str(path), "--strict")

    assert result.exit_code == 1
    divergence = report["divergence"]
    assert (divergence["seq"], divergence["what"]) == (summed.seq, "exec")
    assert divergence["expected"]["stdout"] == "16\n"
    assert divergence["actual"]["stdout"] == "15\n"
    assert report["stopped_at"] == summed.seq
    assert (report["attempted"], report["ok"]) == (len(before) + 1, len(before))
    text = CliRunner().invoke(main, ["replay", str(path), "--strict"])
    assert f"diverged at seq {summed.seq} (exec)" in text.stdout
    # Without --strict, only a command that stops succeeding stops a replay.
    loose, report = replay(str(path))
    assert loose.exit_code == 0 and report["divergence"] is None


def test_an_edited_frame_diverges_unless_frames_are_not_compared(tmp_path: Path) -> None:
    path, entries = edited_copy(tmp_path, "xterm_session")
    expected = [s.expect.frame for s in plan_fork(entries).steps if s.expect.frame]
    settled = next(f for f in expected if f.settled())
    frame = entries[settled.seq]
    assert isinstance(frame, FrameSeen)
    entries[settled.seq] = msgspec.structs.replace(frame, frame="px:" + "0" * 40)
    write(path, entries)

    result, report = replay(str(path), "--strict")

    assert result.exit_code == 1
    divergence = report["divergence"]
    assert divergence["what"] == "frame"
    assert divergence["expected"] == {"screen": 0, "hash": "px:" + "0" * 40, "seq": settled.seq}
    # The fixtures were recorded by another server ID (frame hashes are keyed per server,
    # tiles.py), so the live hash is never the recorded one: the replay compared pictures.
    assert divergence["actual"]["hash"].startswith("px:")
    assert divergence["actual"]["hash"] not in (frame.frame, "px:" + "0" * 40)
    unframed, report = replay(str(path), "--strict", "--no-frames")
    assert unframed.exit_code == 0, unframed.stdout
    assert report["compare_frames"] is False


def test_frames_must_have_the_same_pixels_unless_a_tolerance_is_given(tmp_path: Path) -> None:
    path, entries = edited_copy(tmp_path, "xterm_session")
    # One pixel of every recorded picture a few levels off: far less than any text, as
    # little as an antialiasing wobble.
    for png in (tmp_path / "frames" / "xterm_session").glob("*.png"):
        with Image.open(png) as image:
            picture = image.convert("RGB")
        red, green, blue = picture.getpixel((900, 500))
        picture.putpixel((900, 500), (red ^ 4, green, blue))
        picture.save(png)
    write(path, entries)

    exact, report = replay(str(path), "--strict")

    assert exact.exit_code == 1
    divergence = report["divergence"]
    assert divergence["what"] == "frame"
    assert 0 < divergence["actual"]["distance"] < 1e-8
    tolerant, report = replay(str(path), "--strict", "--frame-tolerance", "1e-6")
    assert tolerant.exit_code == 0, tolerant.stdout
    assert report["divergence"] is None


def test_a_file_that_is_not_a_trace_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text("not a trace\n")

    result = CliRunner().invoke(main, ["replay", str(path)])

    assert result.exit_code == 3
    assert "is not a trace" in result.stderr
