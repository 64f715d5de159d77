"""The runtimes a server has, built from its settings."""

from __future__ import annotations

from holm.adapters.base import Runtime
from holm.adapters.docker.runtime import docker_runtime_if_engine_answers
from holm.adapters.local.runtime import LocalRuntime
from holm.config import Config


def make_runtimes(config: Config, server_id: str | None) -> dict[str, Runtime]:
    """Every runtime by name. Boxes live under `<state_dir>/boxes` whatever the store:
    a box outlives holmd even when its trace does not."""
    runtimes: dict[str, Runtime] = {
        "local": LocalRuntime(
            config.state_dir / "boxes",
            server_id,
            display_base=config.local_display_base,
            display_count=config.local_display_count,
        ),
    }
    docker = docker_runtime_if_engine_answers(
        config.state_dir / "boxes", server_id, base_image=config.docker_base_image
    )
    if docker is not None:
        runtimes[docker.name] = docker
    return runtimes


__all__ = ["make_runtimes"]
