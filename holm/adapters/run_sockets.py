"""The streams of a box whose run folder is on this host (the local and docker runtimes):
each is a Unix socket the box's agent serves there, opened as `box_socket` opens it (no link
the box puts in a socket's place is followed)."""

from __future__ import annotations

from pathlib import Path

from holm.adapters.base import Stream
from holm.box_socket import open_box_connection
from holm.errors import Transport
from holm.wire.runtime import StreamKind

AGENT_SOCKET = "agent.sock"
_WHAT: dict[StreamKind, str] = {
    "agent": "agent",
    "vnc": "viewer",
    "devtools": "DevTools",
}


def socket_name(kind: StreamKind, screen: int) -> str:
    """The name in the run folder of the socket for `kind` on `screen`."""
    match kind:
        case "agent":
            return AGENT_SOCKET
        case "vnc":
            return f"vnc-{screen}.sock"
        case "devtools":
            # Screen 0's Chromium has always served `devtools.sock`.
            return "devtools.sock" if screen == 0 else f"devtools-{screen}.sock"


async def open_run_socket(run_dir: Path, kind: StreamKind, screen: int, limit: int) -> Stream:
    """A stream to the box's socket for `kind`; `Transport` when none answers there."""
    path = run_dir / socket_name(kind, screen)
    try:
        return await open_box_connection(path, limit=limit)
    except OSError as exc:
        what = _WHAT[kind]
        raise Transport(f"the box's {what} is not reachable: {exc.strerror or exc}") from None


__all__ = ["AGENT_SOCKET", "open_run_socket", "socket_name"]
