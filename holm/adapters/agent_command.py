"""The agent's command line, as every runtime starts it: one place, so that the local
runtime's sandbox and the docker runtime's container run the same program the same way."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from holm.wire.spec import AppDefinition, Feature, canonical_json


def agent_command(
    python: list[str],
    run_dir: str,
    *,
    screens: int,
    width: int,
    height: int,
    display_base: int | None = None,
    chromium: bool = True,
    apps: Mapping[str, AppDefinition] | None = None,
    features: Sequence[Feature] = (),
    server_id: str | None = None,
    display_server: str = "x11",
) -> list[str]:
    """`python -m holm.agent …` for a box of `screens` screens of width×height,
    serving its socket in `run_dir` (a path inside the box), hashing frames with the key
    of the server `server_id`."""
    argv = [*python, "-m", "holm.agent", "--run-dir", run_dir]
    argv += ["--screens", str(screens), "--width", str(width), "--height", str(height)]
    if display_base is not None:
        argv += ["--display-base", str(display_base)]
    if not chromium:
        argv.append("--no-chromium")
    if features:
        argv += ["--features", ",".join(sorted(features))]
    if apps:
        argv += ["--apps-json", canonical_json(dict(apps)).decode()]
    if server_id:
        argv += ["--frame-key", frame_key(server_id).hex()]
    if display_server != "x11":
        argv += ["--server", display_server]
    return argv


def frame_key(server_id: str) -> bytes:
    """The key of a server's frame hashes: its own (a frame's hash names a picture on
    that server only), and the same for every box and agent start of it, so that a fork
    on the same server sees the hashes its source recorded. Not a secret: a box can read
    its agent's command line, and the hash does not rely on it (docs/agent.md, Frames)."""
    return hashlib.sha256(b"holm frame key\0" + server_id.encode()).digest()


__all__ = ["agent_command", "frame_key"]
