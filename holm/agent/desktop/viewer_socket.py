"""A screen's viewer socket, `DIR/vnc-<i>.sock`, and an x11vnc for each viewer that
connects to it, started when it connects and ended when it leaves.

An idle box holds no VNC server this way (x11vnc is about 9 MiB of PSS a screen, and polls
the screen while it has a client), as E2B starts a sandbox's stream only when it is asked
for. Each connection gets its own x11vnc in inetd mode: the connection is its stdin and
stdout, it serves that one client, and it ends when the client does. Viewers of one screen
see the same X display, so a person's takeover and any number of watchers need no shared
server: the relay in holmd decides which of them may send input (docs/security.md).

It costs a viewer x11vnc's start (~0.1 s) and no longer its accept loop, which looked at
its socket every 200 ms. x11vnc listens on nothing itself: no TCP port on IPv4
(`-rfbport 0`) or IPv6 (`-rfbportv6 -1 -noipv6`), no socket of its own.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from holm.agent.desktop import processes

log = logging.getLogger("holm.agent")

# At most this many x11vnc at once on a screen; a connection past it is closed at once.
# holmd relays one connection per viewer, and its tickets bound how many there are.
MAX_VIEWERS = 16
# How often an x11vnc that ended by itself, or one whose viewer left, is looked at.
WATCH_MS = 500
# How long an x11vnc may run on after its viewer hung up.
LEAVE_S = 3.0


def x11vnc_argv(display_name: str) -> list[str]:
    # -nonap: x11vnc otherwise "naps" between looks at the screen when its client sends no
    # input, as a person who only watches does: an animating page reached such a viewer
    # at 0.3 updates a second, and at 35 with it (tests/viewer/test_viewer_local.py).
    return [
        "x11vnc",
        "-nonap",
        "-inetd",
        "-display",
        display_name,
        "-rfbport",
        "0",
        "-no6",
        "-rfbportv6",
        "-1",
        "-noipv6",
        "-nopw",
        "-quiet",
    ]


class ViewerSocket:
    """Listens on the screen's viewer socket (mode 0600, in the box's run folder) from a
    thread of its own, starts an x11vnc for each connection, and ends it once the viewer
    has hung up: x11vnc ends by itself when its client leaves, but not when the client
    leaves before x11vnc has greeted it (seen: it ran on for good)."""

    def __init__(self, screen: int, display_name: str, run_dir: Path, env: dict[str, str]):
        self.path = run_dir / f"vnc-{screen}.sock"
        self._display = display_name
        self._env = env
        self._log = run_dir / f"x11vnc-{screen}.log"
        self._count = 0
        # Each viewer's connection (kept to see it hang up, never read) and its x11vnc.
        self._viewers: dict[int, tuple[socket.socket, subprocess.Popen[bytes]]] = {}
        # The x11vnc of viewers that hung up, and when each is ended if it has not ended
        # by itself: it first reads what its viewer sent last (the input of a viewer that
        # sends its clicks and keys and leaves at once).
        self._leaving: dict[subprocess.Popen[bytes], float] = {}
        self.path.unlink(missing_ok=True)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.path))
        # Nobody can connect before the listen, so the mode is set in time.
        os.chmod(self.path, 0o600)
        self._listener.listen(MAX_VIEWERS)
        self._thread = threading.Thread(
            target=self._serve, name=f"viewer-socket-{screen}", daemon=True
        )
        self._thread.start()

    def _serve(self) -> None:
        poller = select.poll()
        poller.register(self._listener, select.POLLIN)
        while True:
            # With no viewer connected or leaving there is nothing to watch but the listener:
            # sleep until one comes, not a wake every WATCH_MS on every idle box.
            watching = self._viewers or self._leaving
            for fd, _ in poller.poll(WATCH_MS if watching else None):
                if fd == self._listener.fileno():
                    self._accept(poller)
                else:
                    self._leaving[self._forget(poller, fd)] = time.monotonic() + LEAVE_S
            for fd, (_, proc) in list(self._viewers.items()):
                if proc.poll() is not None:
                    self._forget(poller, fd)
            now = time.monotonic()
            for proc, deadline in list(self._leaving.items()):
                if proc.poll() is not None or now >= deadline:
                    del self._leaving[proc]
                    if proc.poll() is None:
                        processes.kill_group(proc.pid, signal.SIGTERM)

    def _forget(self, poller: select.poll, fd: int) -> subprocess.Popen[bytes]:
        """Stop watching a viewer's connection and close it; its x11vnc."""
        conn, proc = self._viewers.pop(fd)
        poller.unregister(fd)
        conn.close()
        return proc

    def _accept(self, poller: select.poll) -> None:
        try:
            conn, _ = self._listener.accept()
        except OSError as exc:
            # Out of descriptors, say: the viewer is not served, the socket stays.
            log.warning("%s: a viewer could not be accepted: %s", self._display, exc)
            return
        if len(self._viewers) + len(self._leaving) >= MAX_VIEWERS:
            log.warning("%s: %d viewers already, one refused", self._display, MAX_VIEWERS)
            conn.close()
            return
        try:
            proc = processes.spawn(
                x11vnc_argv(self._display), env=self._env, log_path=self._log, stdio=conn.fileno()
            )
        except OSError as exc:
            log.warning("%s: no x11vnc for a viewer: %s", self._display, exc)
            conn.close()
            return
        self._count += 1
        processes.supervise(f"x11vnc {self._display} #{self._count}", proc)
        self._viewers[conn.fileno()] = conn, proc
        # Only the hang-up: the data is x11vnc's to read.
        poller.register(conn, select.POLLRDHUP)
