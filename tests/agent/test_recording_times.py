"""A recording's times as the agent reports them, without a screen: the stop is read from
the file's last write, which the kernel stamps with its coarse clock."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from holm.agent.desktop.screen_recording import Recorder, _Running
from holm.wire.results import Recording


def test_a_recording_never_stops_before_it_started(tmp_path: Path) -> None:
    recorder = Recorder(0, str(tmp_path), tmp_path)
    video = tmp_path / "screen0.mp4"
    video.write_bytes(b"moov")
    started_ms = int(time.time() * 1000)
    # The file's last write stamped a tick before the start was read, as the coarse
    # clock does for a recording stopped at once (seen in CI: stopped 1 ms before started).
    os.utime(video, ns=((started_ms - 4) * 1_000_000, (started_ms - 4) * 1_000_000))
    proc = subprocess.Popen(["true"])
    proc.wait()
    recorder._running = _Running(
        proc,
        Recording(
            recording=True, path=str(video), fps=5, width=8, height=8, started_at_ms=started_ms
        ),
    )
    ended = recorder.stop()
    assert ended.recording is False
    assert ended.started_at_ms == started_ms
    assert ended.stopped_at_ms is not None and ended.stopped_at_ms >= started_ms
    assert recorder.status() == ended
