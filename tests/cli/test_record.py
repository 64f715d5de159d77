"""`holm record` on a real box of a real holmd (local runtime): ffmpeg records the screen
into an MP4 in the box, `holm file get` fetches it, and `ffprobe` reads what a player would:
its codec, size and duration. The recording survives a pause, ends cleanly when the box
stops, and a recording killed outright is still playable."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_kit import RunHolm, RunHolmProcess
from PIL import ImageChops
from video_kit import ANIMATED, frame_at, probe

from holm.cli.remote import EXIT_CODES

pytestmark = pytest.mark.desktop

REPO = Path(__file__).resolve().parents[2]


def record(holm_process: RunHolmProcess, *args: str) -> dict[str, Any]:
    """`holm record ARGS… --json` as a real process; the recording it answers."""
    done = holm_process("record", *args, "--json", env={"PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def record_for(holm_process: RunHolmProcess, box: str, seconds: float) -> dict[str, Any]:
    """Start a recording and let it run for `seconds`; the recording started."""
    started = record(holm_process, "start", box)
    assert started["recording"], started
    time.sleep(seconds)
    return started


def fetch(holm: RunHolm, box: str, path: str, local: Path) -> Path:
    got = holm("file", "get", box, path, str(local))
    assert got.exit_code == 0, got.output
    return local


def test_three_seconds_of_an_animated_page_are_an_mp4_of_three_seconds_at_the_screen_size(
    holm: RunHolm, holm_process: RunHolmProcess, box: str, tmp_path: Path
) -> None:
    opened = holm("open", box, ANIMATED)
    assert opened.exit_code == 0, opened.output
    started = record_for(holm_process, box, 3)
    assert started["fps"] == 12
    stopped = record(holm_process, "stop", box)
    assert not stopped["recording"] and stopped["path"] == started["path"]

    video = probe(fetch(holm, box, stopped["path"], tmp_path / "three.mp4"))
    assert "mp4" in video["format_name"] and video["codec_name"] == "h264"
    assert (video["width"], video["height"]) == (1280, 800)
    # About 3 s: the time between the start's answer and the stop, as the box measured it.
    span_s = (stopped["stopped_at_ms"] - stopped["started_at_ms"]) / 1000
    assert span_s >= 3.0
    assert abs(video["duration"] - span_s) < 1.0, (video, span_s)
    # The page moved: the recording holds different pictures of it.
    first, last = (frame_at(tmp_path / "three.mp4", s) for s in (0.5, video["duration"] - 0.5))
    assert ImageChops.difference(first, last).getbbox() is not None


def test_status_says_what_runs_and_the_trace_keeps_start_and_stop(
    holm: RunHolm, holm_process: RunHolmProcess, box: str
) -> None:
    started = record(holm_process, "start", box, "--fps", "5")
    assert record(holm_process, "status", box) == started
    text = holm_process("record", "status", box, env={"PYTHONPATH": str(REPO)})
    assert text.returncode == 0 and b"recording  yes" in text.stdout
    again = holm_process("record", "start", box, env={"PYTHONPATH": str(REPO)})
    assert again.returncode == EXIT_CODES["failed"]
    assert b"recording already" in again.stderr
    stopped = holm_process("record", "stop", box, env={"PYTHONPATH": str(REPO)})
    assert stopped.returncode == 0 and stopped.stdout.decode() == f"{started['path']}\n"

    lines = holm("trace", box, "--json").stdout.splitlines()
    steps = [e["action"] for e in map(json.loads, lines) if e["kind"] == "acted"]
    recorded = [step["what"] for step in steps if step["type"] == "record"]
    assert recorded[-2:] == [{"do": "start", "fps": 5}, {"do": "stop"}]
    assert {"do": "status"} not in recorded


def test_a_recording_goes_on_after_a_pause_and_resume(
    holm: RunHolm, holm_process: RunHolmProcess, box: str, tmp_path: Path
) -> None:
    started = record_for(holm_process, box, 1)
    assert holm("pause", box).exit_code == 0
    time.sleep(1)
    assert holm("resume", box).exit_code == 0
    time.sleep(1)
    assert record(holm_process, "status", box)["recording"]
    stopped = record(holm_process, "stop", box)
    assert stopped["path"] == started["path"]
    # The pause shows as a still picture of the time it lasted.
    video = probe(fetch(holm, box, stopped["path"], tmp_path / "paused.mp4"))
    assert video["duration"] >= 3.0
    assert (video["width"], video["height"]) == (1280, 800)


def test_a_recording_killed_outright_is_still_playable(
    holm: RunHolm, holm_process: RunHolmProcess, box: str, tmp_path: Path
) -> None:
    started = record_for(holm_process, box, 2.5)
    # What a box removed without its agent's grace does to ffmpeg.
    killed = holm("exec", box, "--", "pkill", "-KILL", "-x", "ffmpeg")
    assert killed.exit_code == 0, killed.output
    ended = record(holm_process, "status", box)
    assert not ended["recording"] and ended["path"] == started["path"]
    video = probe(fetch(holm, box, started["path"], tmp_path / "killed.mp4"))
    # Whole fragments of a second each: at most the last one is lost.
    assert video["duration"] >= 1.0 and video["codec_name"] == "h264"


def test_a_box_stopped_while_recording_ends_the_file_cleanly(
    holm: RunHolm, holm_process: RunHolmProcess, box: str, tmp_path: Path
) -> None:
    started = record_for(holm_process, box, 2)
    assert holm("stop", box).exit_code == 0
    assert holm("resume", box).exit_code == 0
    # A new desktop: nothing records, and it knows nothing of the last one.
    assert record(holm_process, "status", box) == {"recording": False}
    video = probe(fetch(holm, box, started["path"], tmp_path / "stopped.mp4"))
    assert video["duration"] >= 2.0 and (video["width"], video["height"]) == (1280, 800)
