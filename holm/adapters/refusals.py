"""What every runtime refuses alike before it starts a box, in the same words: a spec
that does not validate, a desktop server the runtime does not run (X11 only, but for the
local and docker runtimes' Wayland), a feature a Wayland desktop has not, limits that do
not parse, and a state dir so deep that the box's sockets would not fit a Unix socket's
path."""

from __future__ import annotations

from pathlib import Path

from holm.adapters.features import WAYLAND_WITHOUT
from holm.adapters.local.limits import check_limits
from holm.errors import BadRequest, Unavailable, Unsupported
from holm.wire.spec import Placement, Spec, canonical_spec, validate_spec

# sun_path is 108 bytes on Linux, its last one the terminating NUL.
MAX_SOCKET_PATH = 107


def refuse_what_no_runtime_runs(
    runtime: str,
    spec: Spec,
    placement: Placement,
    longest_socket: Path,
    servers: tuple[str, ...] = ("x11",),
) -> None:
    problems = validate_spec(spec)
    if problems:
        raise BadRequest("; ".join(problems))
    if spec.desktop.server not in servers:
        raise Unsupported(f"the {runtime} runtime runs X11 desktops only")
    if spec.desktop.server == "wayland":
        features = canonical_spec(spec).desktop.features or []
        missing = sorted(f for f in features if f in WAYLAND_WITHOUT)
        if missing:
            raise Unsupported(
                f"the {runtime} runtime's wayland desktops have no {', '.join(missing)}"
                " (list the spec's features without them)"
            )
    check_limits(placement.memory, placement.cpus)
    if len(str(longest_socket)) > MAX_SOCKET_PATH:
        raise Unavailable(
            f"the box's sockets would be too long a path ({longest_socket}); "
            "set HOLM_STATE_DIR to a shorter folder",
            retryable=False,
        )


__all__ = ["MAX_SOCKET_PATH", "refuse_what_no_runtime_runs"]
