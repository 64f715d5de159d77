"""The runtimes a server has, built from its settings, and the providers of the runtimes it
may be given through the vendor API (`POST /v1/runtimes`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from holm.adapters.base import Runtime
from holm.adapters.docker.remote import docker_remote_runtime
from holm.adapters.docker.runtime import docker_runtime_if_engine_answers, local_engine
from holm.adapters.holmd.runtime import holm_runtime
from holm.adapters.local.runtime import LocalRuntime
from holm.config import Config
from holm.errors import BadRequest, Unsupported
from holm.wire.runtime import RuntimeSetup


def make_runtimes(config: Config, server_id: str | None) -> dict[str, Runtime]:
    """Every runtime by name. Boxes live under `<state_dir>/boxes` whatever the store:
    a box outlives holmd even when its trace does not."""
    runtimes: dict[str, Runtime] = {
        "local": LocalRuntime(
            config.state_dir / "boxes",
            server_id,
            display_base=config.local_display_base,
            display_count=config.local_display_count,
            max_boxes=config.max_boxes,
        ),
    }
    docker = docker_runtime_if_engine_answers(
        config.state_dir / "boxes", server_id, base_image=config.docker_base_image
    )
    if docker is not None:
        runtimes[docker.name] = docker
    return runtimes


# The providers that a vendor of the spec names and no client is built for here.
_NOT_BUILT = {
    "e2b": "no client for E2B is built in this server (no machine it was built on reaches "
    "E2B); docs/runtimes.md says how a provider is added",
}
PROVIDERS = ("docker", "holm")


def remote_runtimes(
    config: Config, server_id: str | None
) -> Callable[[RuntimeSetup], Awaitable[Runtime]]:
    """What makes a runtime of the vendor API from its setup; it reaches nothing, so a
    runtime whose host is down is made all the same. Unknown providers and fields they do
    not take are refused."""

    async def make(setup: RuntimeSetup) -> Runtime:
        folder = config.state_dir / "runtimes" / setup.name
        match setup.provider:
            case "holm":
                return holm_runtime(setup, folder, server_id)
            case "docker":
                # Its images are sent from this host's engine, when there is one.
                return docker_remote_runtime(
                    setup,
                    folder,
                    server_id,
                    local_engine=local_engine,
                    base_image=config.docker_base_image,
                )
            case provider if provider in _NOT_BUILT:
                raise Unsupported(f"provider {provider!r}: {_NOT_BUILT[provider]}")
            case provider:
                raise BadRequest(
                    f"no provider {provider!r}; this server has: {', '.join(PROVIDERS)}"
                )

    return make


__all__ = ["PROVIDERS", "make_runtimes", "remote_runtimes"]
