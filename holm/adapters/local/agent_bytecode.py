"""The agent's bytecode, written next to its code once per server, as the boxes' interpreter
reads it.

A box sees the `holm` package read-only and runs with PYTHONDONTWRITEBYTECODE (sandbox.py),
so a module nobody compiled on the host is compiled again by every box that imports it.
holmd itself imports only the few agent modules it talks to the agent with; the ~40 others
(the agent's screens, captures, windows, …) were compiled anew at each box's start, about
70 ms of a cold create (`bench/local.py`: the agent's socket showed at ~250 ms instead of
~180). So the runtime compiles the package once, in the background, with the boxes' own
interpreter (its bytecode is the one a box looks for). A box that starts before that is
done compiles what it imports, as before; a folder holmd may not write stays as it is.
"""

from __future__ import annotations

import logging
import subprocess
import threading
from pathlib import Path

log = logging.getLogger("holm.local")

COMPILE_WITHIN_S = 300
_started: set[Path] = set()
_lock = threading.Lock()


def compile_once(python: str, package_dir: Path) -> threading.Thread | None:
    """Compile `package_dir` with `python` on a thread of its own, the first time this
    process asks for that folder; the thread, or None when it was asked before."""
    with _lock:
        if package_dir in _started:
            return None
        _started.add(package_dir)
    thread = threading.Thread(
        target=_compile, args=(python, package_dir), name="agent-bytecode", daemon=True
    )
    thread.start()
    return thread


def _compile(python: str, package_dir: Path) -> None:
    try:
        done = subprocess.run(
            [python, "-m", "compileall", "-q", str(package_dir)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=COMPILE_WITHIN_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("the agent's code was not compiled: %s", exc)
        return
    if done.returncode != 0:
        # A folder that is not holmd's to write: each box compiles what it imports.
        log.info("the agent's code was not all compiled: %s", done.stdout.decode()[-500:])
