"""Provider `docker`: a Docker Engine on another host, over TCP with TLS (`fields: {host:
"tcp://HOST:2376"}`, `secrets: {ca, cert, key}`, PEM text).

Its boxes are the `docker` runtime's (runtime.py): the same containers, labels, images,
lifecycle and adoption; what differs is what a host of its own gave:

- the run folder is a tmpfs of the container at /run/holm, not a folder of this host, and
  its sockets (agent, VNC, DevTools) are reached by an exec through the engine's TLS API
  (exec_stream.py): no port of the box or of its host is published;
- the box image, when the engine lacks it, is sent from this host's engine (`docker save`
  there, `docker load` there, through both APIs), built here first by the same builder
  when this host's engine lacks it too; with no engine here, it is built there;
- a box with the network is on a bridge network of the engine's own (`holm-boxes`, with no
  traffic between its containers), since pasta, which gives a local engine's boxes their
  way out, runs on the box's host; without the network, `network_mode: none`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import docker.errors

from holm.adapters.agent_desktop import AgentDesktop
from holm.adapters.agent_ready import await_agent
from holm.adapters.base import STREAM_LIMIT, Progress, Stream
from holm.adapters.docker.engine_tls import (
    EngineAddress,
    engine_client,
    parse_host,
    tls_context,
)
from holm.adapters.docker.exec_stream import open_exec_stream, ping
from holm.adapters.docker.images import (
    DEFAULT_BASE_IMAGE,
    ImageInfo,
    Images,
    engine_arch,
    engine_errors,
    image_ref,
)
from holm.adapters.docker.runtime import (
    BOX_RUN,
    ENGINE_TIMEOUT_S,
    READY_TIMEOUT_S,
    DockerRuntime,
    container_name,
)
from holm.adapters.run_sockets import socket_name
from holm.agent.handed_pipes import PIPES_SOCKET
from holm.errors import BadRequest, Unavailable, Unsupported
from holm.wire import agent_protocol as p
from holm.wire.runtime import RuntimeBox, RuntimeSetup, Started, StreamKind
from holm.wire.spec import MAX_SCREENS, Placement, Spec

log = logging.getLogger(__name__)

FIELDS = {"host"}
SECRETS = {"ca", "cert", "key"}
# The engine's bridge network for boxes with the network: no traffic between its
# containers (`enable_icc` off), so a box reaches no other box.
BOX_NETWORK = "holm-boxes"
# Each poll for a new box's agent is an exec (a relay's python3 start) that waits up to
# this long in the box for the agent's socket, then the runtime asks whether the box still
# runs (a box that ended is not waited for to the end).
AGENT_WAIT_S = 2.0
# How long the engine's `/_ping` may take before the engine counts as gone (its boxes
# `unreachable`): a connect to a host that is down fails at once or times out here.
PROBE_TIMEOUT_S = 5.0
_WHAT: dict[StreamKind, str] = {"agent": "agent", "vnc": "viewer", "devtools": "DevTools"}


def docker_remote_runtime(
    setup: RuntimeSetup,
    folder: Path,
    server_id: str | None,
    *,
    local_engine: Callable[[], docker.DockerClient | None] | None = None,
    base_image: str = DEFAULT_BASE_IMAGE,
    chromium: bool = True,
) -> RemoteDockerRuntime:
    """The runtime of a vendor API setup; it reaches nothing yet. `local_engine` gives this
    host's engine, when it has one, to send images from; `chromium` false starts boxes
    without it (tests that need no browser)."""
    extra = sorted(set(setup.fields) - FIELDS) + sorted(set(setup.secrets) - SECRETS)
    if extra:
        raise BadRequest(
            f"provider 'docker' takes no {', '.join(map(repr, extra))} (fields: host; "
            "secrets: ca, cert, key)"
        )
    missing = sorted(SECRETS - set(setup.secrets))
    if missing:
        raise BadRequest(
            f"provider 'docker' needs secrets {', '.join(missing)}: the engine's CA and this "
            "server's client certificate and key, PEM (TLS is always verified)"
        )
    host, port = parse_host(setup.fields.get("host"))
    tls = tls_context(setup.secrets["ca"], setup.secrets["cert"], setup.secrets["key"])
    return RemoteDockerRuntime(
        EngineAddress(host, port, tls),
        folder / "boxes",
        server_id,
        name=setup.name,
        local_engine=local_engine,
        base_image=base_image,
        chromium=chromium,
    )


class RemoteDockerRuntime(DockerRuntime):
    """Boxes as containers of an engine on another host (`address`)."""

    binds_run_dir = False

    def __init__(
        self,
        address: EngineAddress,
        boxes_dir: Path,
        server_id: str | None = None,
        *,
        name: str,
        local_engine: Callable[[], docker.DockerClient | None] | None = None,
        base_image: str = DEFAULT_BASE_IMAGE,
        ready_timeout_s: float = READY_TIMEOUT_S,
        chromium: bool = True,
        probe_timeout_s: float = PROBE_TIMEOUT_S,
    ) -> None:
        self.address = address
        self.probe_timeout_s = probe_timeout_s
        self._local_engine = local_engine
        # The engine's architecture is asked at the first use, not while it is made.
        super().__init__(
            boxes_dir,
            server_id,
            name=name,
            client=engine_client(address, ENGINE_TIMEOUT_S),
            base_image=base_image,
            arch="",
            ready_timeout_s=ready_timeout_s,
            chromium=chromium,
        )
        self.images = Images(
            self.client,
            runtime=name,
            arch="",
            source=self.images.source,
            base_image=base_image,
            supply=self._send_image,
        )

    def __repr__(self) -> str:
        return f"RemoteDockerRuntime({self.name!r}, {self.address.host}:{self.address.port})"

    async def _know_arch(self) -> None:
        if not self.arch:
            self.arch = await self._call(engine_arch, self.client)
            self.images.arch = self.arch

    # What needs the engine's architecture (an image key) asks it first.

    async def build_image(
        self, spec: Spec, progress: Progress | None = None, *, rebuild: bool = False
    ) -> ImageInfo:
        await self._know_arch()
        return await super().build_image(spec, progress, rebuild=rebuild)

    async def get_image(self, digest: str) -> ImageInfo:
        await self._know_arch()
        return await super().get_image(digest)

    async def create(
        self, box_id: str, spec: Spec, placement: Placement, *, owner: str | None = None
    ) -> Started:
        await self._know_arch()
        return await super().create(box_id, spec, placement, owner=owner)

    # A host that went away

    async def list(self) -> list[RuntimeBox]:
        """The boxes, once the engine answers a ping on a new connection within
        `PROBE_TIMEOUT_S`. The reaper lists every `reap_secs`: that bounds how long a host
        that went away goes unnoticed, and how long its boxes stay `unreachable` once it
        is back."""
        await self._probe()
        return await super().list()

    async def _probe(self) -> None:
        try:
            await ping(self.address, self.probe_timeout_s)
        except Unavailable:
            # What is open to the engine waits on TCP's retransmits, whose backoff grows
            # to minutes: the SDK's pooled connections and the agents' exec streams are
            # dropped, so that once the host is back every call connects anew.
            await asyncio.to_thread(self.client.api.close)
            await self._desktops.close()
            raise

    # Images: sent from this host's engine

    def _send_image(self, key: str, spec: Spec, progress: Progress) -> bool:
        """`docker save` of the image on this host's engine into `docker load` on the
        remote one, streamed; built on this host first by the same builder when it lacks
        it. False (build it there) when this host has no engine or another architecture."""
        local = self._local_engine() if self._local_engine is not None else None
        if local is None:
            progress("no Docker Engine on this host to send the image from: building it there")
            return False
        try:
            with engine_errors():
                if engine_arch(local) != self.arch:
                    progress("this host's engine is of another architecture: building there")
                    return False
                here = Images(
                    local,
                    runtime=self.name,
                    arch=self.arch,
                    source=self.images.source,
                    base_image=self.images.base_image,
                )
                here.find_or_build_blocking(key, spec, progress)
                progress(f"sending {image_ref(key)} to the engine at {self.address.host}")
                saved = local.api.get_image(image_ref(key))
                for line in self.client.api.load_image(saved):
                    if isinstance(line, dict) and line.get("error"):
                        raise docker.errors.APIError(str(line["error"]))
                    if isinstance(line, dict) and line.get("stream"):
                        progress(str(line["stream"]).strip())
            return True
        finally:
            local.close()

    # The run folder is the container's own

    def _longest_socket(self, box_id: str) -> Path:
        return Path(BOX_RUN) / f"vnc-{MAX_SCREENS - 1}.sock"

    def _run_mounts(self, labels: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
        return {}, {"/tmp": "mode=1777", BOX_RUN: "mode=0755"}

    def _network_options(self, spec: Spec) -> dict[str, Any]:
        if not spec.policy.network:
            return {"network_mode": "none"}
        self._ensure_box_network()
        return {"network": BOX_NETWORK}

    def _ensure_box_network(self) -> None:
        if self.client.networks.list(names=[BOX_NETWORK]):
            return
        try:
            self.client.networks.create(
                BOX_NETWORK,
                driver="bridge",
                options={"com.docker.network.bridge.enable_icc": "false"},
                labels={"holm.runtime": self.name},
            )
        except docker.errors.APIError as exc:
            # Made meanwhile by another create.
            if not self.client.networks.list(names=[BOX_NETWORK]):
                raise exc from None

    async def _attach_network(self, box_id: str, container: Any) -> None:
        """The engine's network was given with the container: nothing to attach."""

    def _end_pasta(self, container: Any) -> None:
        """No pasta serves a remote box."""

    def _desktop_of(self, labels: dict[str, str], screens: int) -> Started:
        box_id = labels.get("holm.box", "")
        return Started(
            viewer_urls=[f"docker:{self.name}/{box_id}/vnc-{i}" for i in range(screens)],
            devtools_url=f"docker:{self.name}/{box_id}/devtools" if self.chromium else None,
        )

    async def _await_ready(self, box_id: str, run_dir: Path, screens: int) -> Started:
        async def connect() -> AgentDesktop:
            stream = await open_exec_stream(
                self.address,
                container_name(box_id),
                f"{BOX_RUN}/{socket_name('agent', 0)}",
                _WHAT["agent"],
                p.MAX_FRAME_BYTES,
                wait_s=AGENT_WAIT_S,
                handed_to=f"{BOX_RUN}/{PIPES_SOCKET}",
            )
            return AgentDesktop(*stream)

        desktop = await await_agent(
            box_id,
            connect,
            self.ready_timeout_s,
            check_alive=lambda: self._check_running(box_id),
            check_every_s=AGENT_WAIT_S,
            logs=lambda: self._logs_tail(box_id),
        )
        self._desktops.keep(box_id, desktop)
        self._paused.discard(box_id)
        container = await self._call(self._get, box_id)
        return self._desktop_of(container.labels, screens)

    # Streams: an exec through the engine's API

    async def _connect_agent(self, box_id: str, container: Any) -> AgentDesktop:
        stream = await self.open_stream(box_id, "agent", limit=p.MAX_FRAME_BYTES)
        return await self._desktops.adopt(box_id, stream)

    async def open_stream(
        self, box_id: str, kind: StreamKind, screen: int = 0, *, limit: int = STREAM_LIMIT
    ) -> Stream:
        if kind == "devtools" and not self.chromium:
            raise Unsupported("this docker runtime starts no Chromium: it has no DevTools")
        path = f"{BOX_RUN}/{socket_name(kind, screen)}"
        # The agent reads and writes the exec's pipes itself (holm/agent/handed_pipes.py).
        handed_to = f"{BOX_RUN}/{PIPES_SOCKET}" if kind == "agent" else None
        return await open_exec_stream(
            self.address, container_name(box_id), path, _WHAT[kind], limit, handed_to=handed_to
        )


__all__ = ["BOX_NETWORK", "FIELDS", "SECRETS", "RemoteDockerRuntime", "docker_remote_runtime"]
