"""`exec`: run a command in the box, in its own process group, with a deadline.

Blocking; the server runs each command in its own thread.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Mapping

from holm.agent.desktop import processes
from holm.errors import BadRequest, NotFound
from holm.wire.actions import MAX_EXEC_MS
from holm.wire.results import ExecResult

OUTPUT_CAP = 1024 * 1024
# After the command's group is killed, how long to wait for a pipe still held open by a
# process that left the group.
_DRAIN_AFTER_KILL_S = 1.0


class _Capped:
    """Reads a pipe to its end, keeping the first OUTPUT_CAP bytes."""

    def __init__(self, pipe: object) -> None:
        self.kept = bytearray()
        self.truncated = False
        self._pipe = pipe
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        # The pipe is closed here, at its end, never under a read that another thread
        # still does (a closed number can be reused by the next open).
        with self._pipe:  # type: ignore[attr-defined]
            fd = self._pipe.fileno()  # type: ignore[attr-defined]
            while chunk := os.read(fd, 65536):
                room = OUTPUT_CAP - len(self.kept)
                if len(chunk) > room:
                    self.truncated = True
                    chunk = chunk[:room]
                self.kept += chunk

    def text(self) -> str:
        return self.kept.decode("utf-8", errors="replace")


def run(argv: list[str], timeout_ms: int, *, home: str, env: Mapping[str, str]) -> ExecResult:
    if not argv:
        raise BadRequest("argv is empty")
    if not 0 < timeout_ms <= MAX_EXEC_MS:
        raise BadRequest(f"timeout_ms must be 1 to {MAX_EXEC_MS}")
    try:
        proc = processes.spawn(argv, env=env, cwd=home, capture=True)
    except FileNotFoundError:
        raise NotFound(f"no program {argv[0]!r} in the box") from None
    except PermissionError:
        raise BadRequest(f"{argv[0]!r} is not executable") from None
    out, err = _Capped(proc.stdout), _Capped(proc.stderr)
    deadline = time.monotonic() + timeout_ms / 1000
    timed_out = False
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        # Children left in the group can keep the pipes open; they count toward the time.
        for reader in (out, err):
            reader.thread.join(max(0.0, deadline - time.monotonic()))
        timed_out = out.thread.is_alive() or err.thread.is_alive()
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        if timed_out or proc.returncode is None:
            processes.kill_group(proc.pid)
        proc.wait()
        processes.forget(proc)
        for reader in (out, err):
            reader.thread.join(_DRAIN_AFTER_KILL_S)
    return ExecResult(
        code=None if timed_out else proc.returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        truncated=out.truncated or err.truncated,
    )
