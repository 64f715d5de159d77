"""Screen recording: one `ffmpeg` x11grab per screen, a child of the agent, writing an H.264
MP4 in the box.

The MP4 is fragmented (`-movflags +frag_keyframe+empty_moov`, a keyframe every second,
every packet flushed): a recording that is killed, not stopped (SIGKILL, a box removed
without its agent's grace) is still a playable file, short of at most its last second. A
stop is SIGINT, after which ffmpeg writes its last fragment and ends; the agent stops its
recordings so before it ends the box's processes. A paused box (SIGSTOP of its whole tree)
stops ffmpeg with the X server; on resume it goes on, and the pause shows as a still
picture of the time it lasted (the frame rate stays constant).

A Wayland screen has no X display to grab: its recording is ffmpeg reading raw frames
from a pipe, which a thread of the agent feeds with the screen's last picture (its capture
watcher's: holm/agent/wayland/capture.py) at the recording's frame rate.

Blocking (it waits for ffmpeg); the agent runs it in threads.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from holm.agent.desktop import processes
from holm.errors import Failed, Unsupported
from holm.wire.results import Recording

# Until ffmpeg has written its MP4's header, the recording has not started.
START_S = 10.0
# How long a SIGINT may take to end ffmpeg (its last fragment) before it is killed.
STOP_S = 10.0
# What a box needs, said where it lacks it.
FFMPEG_MISSING = (
    "recording needs ffmpeg in the box, which is not there: on the local runtime install it"
    " on the host (apt-get install ffmpeg, as scripts/setup does); a docker box has it with"
    " the `video` feature"
)


def ffmpeg_argv(display: str, width: int, height: int, fps: int, path: Path) -> list[str]:
    source = ["-f", "x11grab", "-draw_mouse", "1", "-framerate", str(fps)]
    source += ["-video_size", f"{width}x{height}", "-i", f"{display}+0,0"]
    return _ffmpeg(source, fps, path)


def ffmpeg_pipe_argv(fd: int, width: int, height: int, fps: int, path: Path) -> list[str]:
    """Raw BGRX frames of width×height from descriptor `fd` (a Wayland screen's)."""
    source = ["-f", "rawvideo", "-pix_fmt", "bgr0", "-framerate", str(fps)]
    source += ["-video_size", f"{width}x{height}", "-i", f"pipe:{fd}"]
    return _ffmpeg(source, fps, path)


def _ffmpeg(source: list[str], fps: int, path: Path) -> list[str]:
    # yuv420p (what players take) needs an even width and height: an odd one loses a column
    # or a row.
    return [
        "ffmpeg",
        "-nostdin",
        "-hide_banner",
        "-loglevel",
        "error",
        *source,
        "-vf",
        "crop=trunc(iw/2)*2:trunc(ih/2)*2",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-pix_fmt",
        "yuv420p",
        "-g",
        str(fps),
        "-flush_packets",
        "1",
        "-movflags",
        "+frag_keyframe+empty_moov+default_base_moof",
        "-y",
        str(path),
    ]


class _Feeder:
    """Writes the screen's last picture to ffmpeg's pipe `fps` times a second until the
    pipe closes (ffmpeg ended) or `stop`."""

    def __init__(self, fd: int, frames: Callable[[], bytes], fps: int) -> None:
        self._fd = fd
        self._frames = frames
        self._every = 1 / fps
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="recording-feed", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        due = time.monotonic()
        try:
            while not self._stopped.is_set():
                data = memoryview(self._frames())
                while data:
                    data = data[os.write(self._fd, data) :]
                due += self._every
                self._stopped.wait(max(0.0, due - time.monotonic()))
        except OSError:
            return
        finally:
            with contextlib.suppress(OSError):
                os.close(self._fd)

    def stop(self) -> None:
        """Stop feeding: the pipe closes, and ffmpeg ends at its end."""
        self._stopped.set()
        self._thread.join(STOP_S)


class _Running:
    def __init__(
        self, proc: subprocess.Popen[bytes], view: Recording, feeder: _Feeder | None = None
    ) -> None:
        self.proc = proc
        self.view = view
        self.feeder = feeder


class Recorder:
    """The recordings of one screen: at most one running, and the last one made."""

    def __init__(self, screen: int, home: str, run_dir: Path) -> None:
        self.screen = screen
        self.folder = Path(home) / "recordings"
        self.run_dir = run_dir
        self._lock = threading.Lock()
        self._running: _Running | None = None
        self._last = Recording(recording=False)

    def status(self) -> Recording:
        with self._lock:
            return self._status()

    def _status(self) -> Recording:
        running = self._running
        if running is None:
            return self._last
        if running.proc.poll() is not None:
            # It ended on its own (its display went away, the disk filled up).
            return self._ended(running)
        return running.view

    def start(
        self,
        display: str,
        width: int,
        height: int,
        fps: int,
        env: dict[str, str],
        frames: Callable[[], bytes] | None = None,
    ) -> Recording:
        """Record the X display `display`, or with `frames` the pictures it gives (raw
        BGRX of width×height: a Wayland screen's)."""
        with self._lock:
            now = self._status()
            if now.recording:
                raise Failed(f"screen {self.screen} is recording already, to {now.path}")
            if shutil.which("ffmpeg", path=env.get("PATH")) is None:
                raise Unsupported(FFMPEG_MISSING)
            self.folder.mkdir(parents=True, exist_ok=True)
            stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
            path = self.folder / f"screen{self.screen}-{stamp}-{time.time_ns() % 10**9:09d}.mp4"
            log_path = self.run_dir / f"ffmpeg-{self.screen}.log"
            feeder: _Feeder | None = None
            if frames is None:
                argv = ffmpeg_argv(display, width, height, fps, path)
                proc = processes.spawn(argv, env=env, log_path=log_path)
            else:
                read, write = os.pipe()
                try:
                    argv = ffmpeg_pipe_argv(read, width, height, fps, path)
                    proc = processes.spawn(argv, env=env, log_path=log_path, pass_fds=(read,))
                finally:
                    os.close(read)
                feeder = _Feeder(write, frames, fps)
            try:
                _wait_started(self.screen, proc, path, log_path)
            except Failed:
                if feeder is not None:
                    feeder.stop()
                processes.forget(proc)
                path.unlink(missing_ok=True)
                raise
            view = Recording(
                recording=True,
                path=str(path),
                fps=fps,
                width=width - width % 2,
                height=height - height % 2,
                # From its first frame, as near as can be told: the video's own start.
                started_at_ms=int(time.time() * 1000),
            )
            self._running = _Running(proc, view, feeder)
            return view

    def stop(self) -> Recording:
        with self._lock:
            running = self._running
            if running is None:
                raise Failed(f"screen {self.screen} is not recording")
            _end(running)
            return self._ended(running)

    def close(self) -> None:
        """End the running recording, if any, as a stop does (the box is ending)."""
        with self._lock:
            if self._running is not None:
                _end(self._running)
                self._ended(self._running)

    def _ended(self, running: _Running) -> Recording:
        """The recording as it ended: at its file's last write, which is when ffmpeg ended
        even when that is noticed later."""
        processes.forget(running.proc)
        self._running = None
        assert running.view.path is not None
        try:
            stopped_ms = int(Path(running.view.path).stat().st_mtime * 1000)
        except OSError:
            stopped_ms = int(time.time() * 1000)
        # A file's mtime comes from the kernel's coarse clock (a tick behind time.time()),
        # so a short recording could seem to stop before it started.
        assert running.view.started_at_ms is not None
        stopped_ms = max(stopped_ms, running.view.started_at_ms)
        self._last = Recording(
            recording=False,
            path=running.view.path,
            fps=running.view.fps,
            width=running.view.width,
            height=running.view.height,
            started_at_ms=running.view.started_at_ms,
            stopped_at_ms=stopped_ms,
        )
        return self._last


def _wait_started(screen: int, proc: subprocess.Popen[bytes], path: Path, log_path: Path) -> None:
    """Until the MP4's header is written; a failure to start says ffmpeg's last words."""
    deadline = time.monotonic() + START_S
    while not (path.exists() and path.stat().st_size > 0):
        if proc.poll() is not None:
            why = processes.log_tail(log_path) or "no message"
            raise Failed(f"ffmpeg could not record screen {screen}: {why}")
        if time.monotonic() > deadline:
            _end_process(proc)
            raise Failed(f"ffmpeg did not start recording screen {screen} in {START_S:.0f} s")
        time.sleep(0.02)


def _end(running: _Running) -> None:
    if running.feeder is not None:
        # Before the SIGINT: ffmpeg is not left waiting on a frame half written.
        running.feeder.stop()
    _end_process(running.proc)


def _end_process(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT, so ffmpeg writes its last fragment; SIGKILL when it takes too long (the
    fragments written before stay playable)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            processes.kill_group(proc.pid)
            proc.wait()
