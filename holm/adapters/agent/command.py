"""The agent's command line, as every runtime starts it: one place, so that the local
runtime's sandbox and the docker runtime's container run the same program the same way."""

from __future__ import annotations

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
) -> list[str]:
    """`python -m holm.adapters.agent …` for a box of `screens` screens of width×height,
    serving its socket in `run_dir` (a path inside the box)."""
    argv = [*python, "-m", "holm.adapters.agent", "--run-dir", run_dir]
    argv += ["--screens", str(screens), "--width", str(width), "--height", str(height)]
    if display_base is not None:
        argv += ["--display-base", str(display_base)]
    if not chromium:
        argv.append("--no-chromium")
    if features:
        argv += ["--features", ",".join(features)]
    if apps:
        argv += ["--apps-json", canonical_json(dict(apps)).decode()]
    return argv


__all__ = ["agent_command"]
