"""The `docker` runtime: each box is a container of the Docker Engine, made from the image
of its spec (`images.py`), running the in-box agent.

The container is the box's record: its labels name the box, the server and the runtime,
and keep the spec and placement, so a restarted holmd (a new runtime object) lists and
adopts its boxes, even one its store lost. The agent's run folder is a host folder
(`<boxes_dir>/<box_id>/run`) bound at /run/holm, so holmd reaches `agent.sock` and the
viewers' `vnc-<i>.sock` with no TCP and no published port.
An engine on another host (remote.py, provider `docker`) changes what the hooks under
"What differs for an engine on another host" do: the run folder, the streams and the
network.

Lifecycle on the engine: pause/resume are the engine's pause (the freezer); stop stops the
container, and start starts the same container again, so every box keeps its files across
stop and start. /tmp is a tmpfs, as after a reboot. Delete removes the container.

Errors, as the engine sees them (the same as the local runtime's):
- `NotFound`: the engine has no container for that box.
- `Denied`: a lifecycle step the box's state does not allow (start a running box, resume
  a stopped one).
- `ScreenUnavailable`: the desktop of a paused or stopped box.
- `Transport`: the agent cannot be reached.
- `Unavailable` / `Timeout`: the engine does not answer, or a desktop did not come up
  (the message quotes the container's log).

Every docker SDK call runs in a thread.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, Literal, TypeVar

import docker
import docker.errors
import msgspec
import requests.exceptions

from holm.adapters.agent_command import agent_command
from holm.adapters.agent_desktop import AgentConnections, AgentDesktop
from holm.adapters.agent_ready import await_agent
from holm.adapters.base import STREAM_LIMIT, Desktop, Progress, Stream
from holm.adapters.box_locks import BoxLocks
from holm.adapters.docker import network
from holm.adapters.docker.images import (
    DEFAULT_BASE_IMAGE,
    LABEL_KEY,
    ImageInfo,
    Images,
    ImageSource,
    engine_arch,
    engine_errors,
    image_source,
)
from holm.adapters.features import WAYLAND_WITHOUT
from holm.adapters.local.limits import DEFAULT_PIDS_MAX, parse_cpus, parse_memory
from holm.adapters.refusals import refuse_what_no_runtime_runs
from holm.adapters.run_sockets import open_run_socket
from holm.adapters.to_the_end import in_thread
from holm.errors import (
    BadRequest,
    Denied,
    Failed,
    HolmError,
    NotFound,
    ScreenUnavailable,
    Unavailable,
    Unsupported,
)
from holm.wire.runtime import BuiltImage, Capabilities, RuntimeBox, Started, StreamKind
from holm.wire.spec import (
    DEFAULT_HEIGHT,
    DEFAULT_WIDTH,
    MAX_SCREENS,
    Placement,
    Spec,
    canonical_json,
    canonical_spec,
    spec_digest,
)

T = TypeVar("T")
log = logging.getLogger(__name__)

LABEL_BOX = "holm.box"
LABEL_SERVER = "holm.server"
LABEL_RUNTIME = "holm.runtime"
LABEL_SPEC = "holm.spec"
LABEL_PLACEMENT = "holm.placement"
LABEL_CREATED = "holm.created_at_ms"
LABEL_RUN_DIR = "holm.run_dir"
LABEL_EXPIRES = "holm.expires_after_secs"
LABEL_IDLE = "holm.idle_timeout_secs"
LABEL_PROFILE = "holm.profile"
# The workspace that launched the box, for a server that adopts it without its trace.
LABEL_OWNER = "holm.owner"

# Belongs with the other settings in holm.config once Config has a field for it.
# An engine that does not answer a ping in this long is taken as absent.
PING_TIMEOUT_S = 3
# Long calls (a stop waits for its grace, an image build streams for minutes) stay open.
ENGINE_TIMEOUT_S = 600
BOX_HOME = "/home/box"
BOX_RUN = "/run/holm"
# Where the agent keeps each screen's Chromium profile (`chromium-<screen>`).
BOX_PROFILES = f"{BOX_HOME}/.holm"
BOX_HOSTNAME = "holm-box"
READY_TIMEOUT_S = 90.0
STOP_GRACE_S = 5
STATE_POLL_S = 0.5
LOG_TAIL_LINES = 30
# Chromium's own /dev/shm use is off (--disable-dev-shm-usage); this is for the rest.
SHM_SIZE = "256m"
IPV6_ON = {f"net.ipv6.conf.{name}.disable_ipv6": "0" for name in ("all", "default", "lo")}
# sun_path holds 108 bytes with its NUL.
# A profile lock names a pid of the last run; in the same container that pid may now be
# another process, and Chromium would refuse the profile.
_START_COMMAND = 'rm -f "$HOME"/.holm/chromium-*/Singleton*; exec "$@"'

# `POST …/apps` in a running box: apt as the box's own root, with no capability more than
# the box has. The engine's exec starts it in the container, never a program of the box,
# so it runs whatever the box did to its own files, with the box's powers only. apt's
# `_apt` user would need CAP_SETUID, and the image's archive cache is `_apt`'s: apt runs as
# root and caches in a folder of its own.
_INSTALL_SCRIPT = """\
set -e
export DEBIAN_FRONTEND=noninteractive
cache=/var/cache/holm-apt
trap 'rm -rf "$cache" /var/lib/apt/lists/*' EXIT
mkdir -p "$cache/partial"
apt-get -q -o APT::Sandbox::User=root update
apt-get -q -y --no-install-recommends -o APT::Sandbox::User=root \\
  -o Dir::Cache::archives="$cache/" install -- "$@"
"""
INSTALL_TAIL_CHARS = 1500

# What root in a box keeps of root's capabilities: CAP_SETGID, which xterm needs to start
# its shell. Without the rest it can mount nothing, make no device, read no file it does
# not own past its mode bits, trace no process, and configure no interface. With
# no-new-privileges no setuid program gives any of them back.
CAPS_KEPT = ["SETGID"]
# A Wayland box's agent starts sway as the box's uid 1000 (sway refuses root:
# holm/agent/wayland/sway_up.py), which takes CAP_SETUID too: a root that may become any uid
# of its own container, as the local runtime's Wayland box (docs/security.md).
WAYLAND_CAPS_KEPT = [*CAPS_KEPT, "SETUID"]
SECURITY_OPT = ["no-new-privileges"]
# The whole environment of a box's container, composed here (the image adds LANG): the
# engine passes nothing of holmd's.
BOX_ENV = {
    "HOME": BOX_HOME,
    "USER": "root",
    "LANG": "C.UTF-8",
    "PYTHONUNBUFFERED": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}

_PROFILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

_spec_decoder = msgspec.json.Decoder(Spec)
_placement_decoder = msgspec.json.Decoder(Placement)


def _now_ms() -> int:
    return int(time.time() * 1000)


def container_name(box_id: str) -> str:
    return f"holm-{box_id}"


def profile_volume(profile: str) -> str:
    """The named volume of a browser profile (`owned_profile`): it outlives the boxes that
    use it."""
    return f"holm-profile-{profile}"


def owned_profile(profile: str, owner: str | None) -> str:
    """A placement's profile as its workspace's own: two workspaces that name the same
    profile get one each, or one's box would open the other's cookies. The server token's
    (no owner) keep the name as given."""
    return profile if owner is None else f"{owner}.{profile}"


class DockerRuntime:
    """Boxes as containers of one Docker Engine (the one `client` talks to)."""

    def __init__(
        self,
        boxes_dir: Path,
        server_id: str | None = None,
        *,
        name: str = "docker",
        client: docker.DockerClient | None = None,
        base_image: str = DEFAULT_BASE_IMAGE,
        source: ImageSource | None = None,
        arch: str | None = None,
        ready_timeout_s: float = READY_TIMEOUT_S,
        stop_grace_s: int = STOP_GRACE_S,
        chromium: bool = True,
        pids_limit: int = DEFAULT_PIDS_MAX,
    ) -> None:
        """Blocks briefly (it asks the engine its architecture unless `arch` is given):
        make it before the event loop runs, or in a thread."""
        self.name = name
        self.boxes_dir = boxes_dir
        self.server_id = server_id
        self.ready_timeout_s = ready_timeout_s
        self.stop_grace_s = stop_grace_s
        # Without Chromium a box is only Xvfb, openbox and x11vnc: for tests and benches.
        self.chromium = chromium
        # The most tasks a box may have at once: a fork bomb stops there.
        self.pids_limit = pids_limit
        self.client = client if client is not None else docker.from_env(timeout=ENGINE_TIMEOUT_S)
        with engine_errors():
            self.arch = arch if arch is not None else engine_arch(self.client)
        self.images = Images(
            self.client,
            runtime=name,
            arch=self.arch,
            source=source if source is not None else image_source(base_image),
            base_image=base_image,
        )
        self._desktops = AgentConnections()
        # Boxes this object paused: their desktop is refused without asking the engine.
        self._paused: set[str] = set()
        self._locks = BoxLocks()

    def can(self) -> Capabilities:
        # Besides these, the defaults: pause, stop, network off, viewers, 8 screens.
        return Capabilities(
            persistent=True,
            packages=True,
            memory_limit=True,
            cpu_limit=True,
            profile=True,
            # The agent relays each box's Chromium DevTools (docs/runtimes.md).
            pages=self.chromium,
            # Its own image (dockerfile.py): headless sway, wayvnc, pywayland.
            wayland=True,
            wayland_without=list(WAYLAND_WITHOUT),
        )

    # Images (served by the server as the images API)

    async def build_image(
        self, spec: Spec, progress: Progress | None = None, *, rebuild: bool = False
    ) -> ImageInfo:
        return await self.images.build_image(spec, progress, rebuild=rebuild)

    async def list_images(self) -> list[ImageInfo]:
        return await self.images.list_images()

    async def get_image(self, digest: str) -> ImageInfo:
        return await self.images.get_image(digest)

    async def remove_image(self, digest: str) -> None:
        await self.images.remove_image(digest)

    # Lifecycle

    async def create(
        self, box_id: str, spec: Spec, placement: Placement, *, owner: str | None = None
    ) -> Started:
        self._refuse(box_id, spec, placement)
        try:
            had = (await self.images.get_image(self.images.key(spec))).state is None
        except NotFound:
            had = False
        image = await self.images.build_image(spec)
        run_dir = self._run_dir(box_id)
        labels = {
            LABEL_BOX: box_id,
            LABEL_SERVER: self.server_id or "",
            LABEL_RUNTIME: self.name,
            # As it was asked for, so a server that lost the box can launch it again.
            LABEL_SPEC: canonical_json(spec).decode(),
            LABEL_PLACEMENT: canonical_json(placement).decode(),
            LABEL_CREATED: str(_now_ms()),
            # Empty where the run folder is not one of this host's (a remote engine's box).
            LABEL_RUN_DIR: str(run_dir) if self.binds_run_dir else "",
            LABEL_KEY: image.digest,
        }
        if placement.expires_after_secs is not None:
            labels[LABEL_EXPIRES] = str(placement.expires_after_secs)
        if placement.idle_timeout_secs is not None:
            labels[LABEL_IDLE] = str(placement.idle_timeout_secs)
        if placement.profile is not None:
            labels[LABEL_PROFILE] = owned_profile(placement.profile, owner)
        if owner is not None:
            labels[LABEL_OWNER] = owner
        async with self._locks.lifecycle(box_id):
            if await self._call(self._find, box_id) is not None:
                raise BadRequest(f"the docker runtime already has a box {box_id}")
            try:
                container = await self._call(self._run_container, image.image, labels)
                await self._attach_network(box_id, container)
                started = await self._await_ready(box_id, run_dir, spec.desktop.screens)
            except BaseException:
                await self._drop_desktop(box_id)
                await self._call(self._remove, box_id)
                raise
        if not had:
            # Built on the way: the engine records it as the images API's builds are.
            digest = image.spec_digest or spec_digest(spec)
            started.built = BuiltImage(image=image.image, spec_digest=digest)
        return started

    async def pause(self, box_id: str) -> None:
        async with self._locks.lifecycle(box_id):
            container = await self._call(self._get, box_id)
            status = container.status
            if status == "paused":
                return
            if status != "running":
                raise Denied(f"box {box_id} is stopped; only a running box can be paused")
            await self._call(container.pause)
            self._paused.add(box_id)

    async def resume(self, box_id: str) -> None:
        async with self._locks.lifecycle(box_id):
            container = await self._call(self._get, box_id)
            if container.status == "paused":
                await self._call(container.unpause)
            elif container.status != "running":
                raise Denied(f"box {box_id} is stopped; start it rather than resume it")
            self._paused.discard(box_id)

    async def stop(self, box_id: str) -> None:
        async with self._locks.lifecycle(box_id):
            container = await self._call(self._get, box_id)
            await self._drop_desktop(box_id)
            if container.status == "paused":
                # The engine does not stop a frozen container.
                await self._call(container.unpause)
            self._paused.discard(box_id)
            if container.status in ("running", "paused", "restarting"):
                await self._call(container.stop, timeout=self.stop_grace_s)
            # Also when the container ended by itself: its pasta does not.
            await self._call(self._end_pasta, container)

    async def start(self, box_id: str) -> Started:
        async with self._locks.lifecycle(box_id):
            container = await self._call(self._get, box_id)
            if container.status in ("running", "paused", "restarting"):
                raise Denied(f"box {box_id} is running; stop it before starting it again")
            run_dir = Path(container.labels.get(LABEL_RUN_DIR) or self._run_dir(box_id))
            profile = container.labels.get(LABEL_PROFILE)
            if self.binds_run_dir:
                await self._call(_empty, run_dir)
            if profile:
                await self._call(self._refuse_profile_in_use, profile, box_id)
            # The same container: a stopped box keeps its files, persistent or not.
            await self._call(container.start)
            screens = _spec_decoder.decode(container.labels[LABEL_SPEC]).desktop.screens
            try:
                await self._attach_network(box_id, container)
                return await self._await_ready(box_id, run_dir, screens)
            except BaseException:
                await self._drop_desktop(box_id)
                raise

    async def delete(self, box_id: str) -> None:
        async with self._locks.lifecycle(box_id):
            await self._drop_desktop(box_id)
            await self._call(self._remove, box_id)
            self._paused.discard(box_id)
        self._locks.forget(box_id)

    async def list(self) -> list[RuntimeBox]:
        # The pasta records are read before the containers are listed: a record written
        # since belongs to a box whose container the listing may have missed (a create
        # under way), not to one that is gone.
        with_pasta = await self._call(self._boxes_with_pasta)
        containers = await self._call(
            self._containers, {"label": [LABEL_BOX, f"{LABEL_RUNTIME}={self.name}"]}
        )
        listed = [_runtime_box(c, self._desktop_of) for c in containers]
        orphaned = with_pasta - {box.box_id for box in listed}
        if orphaned:
            await self._call(self._end_orphaned_pastas, orphaned)
        for container in await self._call(self._without_network, containers):
            await self._renew_network(container)
        return listed

    def _containers(self, filters: dict[str, Any], *, all: bool = True) -> Sequence[Any]:
        """The containers `filters` match, each read whole; one removed between the listing
        and its read is left out. (The SDK's own `list` reads each and fails on one gone:
        a box deleted meanwhile, this server's or another's on the same engine, would fail
        the whole listing.)"""
        listed = self.client.containers.list(all=all, sparse=True, filters=filters)
        read = (self._read_container(sparse.id) for sparse in listed)
        return [container for container in read if container is not None]

    def _read_container(self, container_id: str) -> Any | None:
        try:
            return self.client.containers.get(container_id)
        except docker.errors.NotFound:
            return None

    def _without_network(self, containers: Sequence[Any]) -> Sequence[Any]:
        return [
            c
            for c in containers
            if c.status == "running" and c.labels.get(LABEL_RUN_DIR) and network.lost(_box_dir(c))
        ]

    async def _renew_network(self, container: Any) -> None:
        """Give a running box whose pasta ended (it crashed, or was killed) a new one: the
        box had no way out since, and would have none until a stop and a start. The
        reaper lists the boxes every 30 s, and a restarted holmd at once."""
        box_id = container.labels[LABEL_BOX]
        async with self._locks.lifecycle(box_id):
            try:
                await self._call(container.reload)
                init_pid = int(container.attrs.get("State", {}).get("Pid") or 0)
                if container.status != "running" or init_pid <= 0:
                    return
                if await in_thread(network.attach_again, init_pid, _box_dir(container)):
                    log.info("box %s: its pasta had ended; a new one serves it", box_id)
            except (HolmError, network.NetworkFailed) as exc:
                log.warning("box %s: its network could not come back: %s", box_id, exc)

    def _boxes_with_pasta(self) -> set[str]:
        return {record.parent.name for record in self.boxes_dir.glob(f"*/{network.RECORD}")}

    def _end_orphaned_pastas(self, box_ids: set[str]) -> None:
        """End the pasta of each box whose container is gone without its delete (removed
        behind the runtime's back): nothing else would, as pasta holds the namespace it
        serves. The reaper lists the boxes every 30 s. Its folder stays: a box the server
        took for lost keeps its files, as before."""
        for box_id in box_ids:
            network.end(self.boxes_dir / box_id)

    async def open_stream(
        self, box_id: str, kind: StreamKind, screen: int = 0, *, limit: int = STREAM_LIMIT
    ) -> Stream:
        container = await self._call(self._get, box_id)
        if kind == "devtools" and not self.chromium:
            raise Unsupported("this docker runtime starts no Chromium: it has no DevTools")
        run_dir = Path(container.labels.get(LABEL_RUN_DIR) or self._run_dir(box_id))
        return await open_run_socket(run_dir, kind, screen, limit)

    async def desktop(self, box_id: str) -> Desktop:
        async with self._locks.connect(box_id):
            live = self._desktops.live(box_id)
            if live is not None and box_id not in self._paused:
                return live
            container = await self._call(self._get, box_id)
            if container.status == "paused":
                raise ScreenUnavailable(f"box {box_id} is paused; resume it first")
            if container.status != "running":
                raise ScreenUnavailable(f"box {box_id} is stopped; start it first")
            self._paused.discard(box_id)
            return await self._connect_agent(box_id, container)

    async def install_apps(self, box_id: str, apps: Mapping[str, Sequence[str]]) -> None:
        """apt-get in the running container, through its own network: a box without the
        network cannot reach the mirrors, and is refused."""
        packages = sorted({pkg for pkgs in apps.values() for pkg in pkgs})
        async with self._locks.lifecycle(box_id):
            container = await self._call(self._get, box_id)
            if container.status != "running":
                raise Denied(f"box {box_id} is {container.status}; apps go into a running box")
            spec = _spec_decoder.decode(container.labels.get(LABEL_SPEC, "{}"))
            if not packages:
                return
            if not spec.policy.network:
                raise Unsupported(
                    "a docker box without the network cannot reach Debian's mirrors to "
                    "install applications; name them in the spec's apps instead"
                )
            code, output = await self._call(
                container.exec_run,
                ["sh", "-c", _INSTALL_SCRIPT, "holm-install", *packages],
                user="root",
                environment=dict(BOX_ENV),
            )
        if code != 0:
            text = output.decode(errors="replace").strip()[-INSTALL_TAIL_CHARS:]
            raise Failed(f"installing {', '.join(packages)} ended with {code}: {text}")

    async def close(self) -> None:
        """Let go of the boxes' agents and the engine; the containers keep running."""
        await self._desktops.close()
        await asyncio.to_thread(self.client.close)

    # What a box is

    def _refuse(self, box_id: str, spec: Spec, placement: Placement) -> None:
        refuse_what_no_runtime_runs(
            self.name, spec, placement, self._longest_socket(box_id), ("x11", "wayland")
        )
        if placement.profile is not None and not _PROFILE.fullmatch(placement.profile):
            raise BadRequest(
                f"placement.profile {placement.profile!r} must be 1 to 64 letters, digits, "
                "'.', '_' or '-'"
            )

    def _run_dir(self, box_id: str) -> Path:
        return self.boxes_dir / box_id / "run"

    # What differs for an engine on another host (remote.py): where the run folder is,
    # how its sockets are reached, and how a box gets the network.

    # The run folder is this host's, bound at /run/holm.
    binds_run_dir = True

    def _longest_socket(self, box_id: str) -> Path:
        return self._run_dir(box_id) / f"vnc-{MAX_SCREENS - 1}.sock"

    def _run_mounts(self, labels: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
        """The container's volumes and tmpfs mounts, but a profile's."""
        run_dir = Path(labels[LABEL_RUN_DIR])
        _empty(run_dir)
        return {str(run_dir): {"bind": BOX_RUN, "mode": "rw"}}, {"/tmp": "mode=1777"}

    def _network_options(self, spec: Spec) -> dict[str, Any]:
        # No network of the engine's, with the network or without: a box that may use it
        # gets pasta (`_attach_network`), so that no bridge joins it to other boxes or to
        # the host's addresses.
        options: dict[str, Any] = {"network_mode": "none"}
        if spec.policy.network:
            # The engine turns IPv6 off in a container of no network of its own; pasta
            # gives the box the host's IPv6 as it does a local box (and stops, refused,
            # where it is off).
            options["sysctls"] = dict(IPV6_ON)
        return options

    def _desktop_of(self, labels: dict[str, str], screens: int) -> Started:
        run_dir = labels.get(LABEL_RUN_DIR)
        return _desktop_at(Path(run_dir), screens) if run_dir else Started()

    async def _connect_agent(self, box_id: str, container: Any) -> AgentDesktop:
        """A new connection to the running box's agent, through its socket in the run
        folder; one that cannot be reached is `Transport` (the client says so)."""
        run_dir = Path(container.labels.get(LABEL_RUN_DIR) or self._run_dir(box_id))
        return await self._desktops.connect(box_id, run_dir / "agent.sock")

    def _end_pasta(self, container: Any) -> None:
        if container.labels.get(LABEL_RUN_DIR):
            network.end(_box_dir(container))

    def _run_container(self, image: str, labels: dict[str, str]) -> Any:
        spec = canonical_spec(_spec_decoder.decode(labels[LABEL_SPEC]))
        placement = _placement_decoder.decode(labels[LABEL_PLACEMENT])
        desktop = spec.desktop
        volumes, tmpfs = self._run_mounts(labels)
        if desktop.server == "wayland":
            # The engine mounts a tmpfs noexec; sway runs XWayland through a wrapper it
            # writes in its runtime folder in /tmp (holm/agent/wayland/sway_up.py). A box
            # runs what it writes in its home anyway: this takes nothing from it.
            tmpfs["/tmp"] += ",exec"
        agent = agent_command(
            ["python3"],
            BOX_RUN,
            screens=desktop.screens,
            width=desktop.width or DEFAULT_WIDTH,
            height=desktop.height or DEFAULT_HEIGHT,
            chromium=self.chromium,
            apps=spec.apps,
            features=desktop.features or [],
            server_id=self.server_id,
            display_server=desktop.server,
        )
        options: dict[str, Any] = {}
        if placement.memory is not None:
            options["mem_limit"] = parse_memory(placement.memory)
        if placement.cpus is not None:
            options["nano_cpus"] = int(parse_cpus(placement.cpus) * 1e9)
        options.update(self._network_options(spec))
        profile = labels.get(LABEL_PROFILE)
        if profile:
            self._refuse_profile_in_use(profile, labels[LABEL_BOX])
            volumes[profile_volume(profile)] = {"bind": BOX_PROFILES, "mode": "rw"}
        return self.client.containers.run(
            image,
            ["sh", "-c", _START_COMMAND, "holm-box", *agent],
            name=container_name(labels[LABEL_BOX]),
            detach=True,
            labels=labels,
            # docker-init as pid 1 reaps what the agent's children leave behind.
            init=True,
            hostname=BOX_HOSTNAME,
            working_dir=BOX_HOME,
            environment=dict(BOX_ENV),
            cap_drop=["ALL"],
            cap_add=list(WAYLAND_CAPS_KEPT if desktop.server == "wayland" else CAPS_KEPT),
            security_opt=list(SECURITY_OPT),
            pids_limit=self.pids_limit,
            volumes=volumes,
            tmpfs=tmpfs,
            shm_size=SHM_SIZE,
            **options,
        )

    async def _attach_network(self, box_id: str, container: Any) -> None:
        """Give a box that may use the network its way out, as a local box has it
        (docker/network.py); the box is not ready before it is up."""
        spec = _spec_decoder.decode(container.labels[LABEL_SPEC])
        if not spec.policy.network:
            return
        await self._call(container.reload)
        init_pid = int(container.attrs.get("State", {}).get("Pid") or 0)
        try:
            if init_pid <= 0:
                raise network.NetworkFailed("the box's container does not run")
            await in_thread(network.attach, init_pid, _box_dir(container))
        except network.NetworkFailed as exc:
            # A container that ended on its way up says why in its own log; the engine
            # may not have seen its end yet.
            if init_pid <= 0 or not Path(f"/proc/{init_pid}").exists():
                with suppress(HolmError, requests.exceptions.RequestException):
                    await self._call(container.wait, timeout=self.stop_grace_s)
            await self._check_running(box_id)
            raise Unavailable(f"box {box_id}: {exc}") from None

    def _refuse_profile_in_use(self, profile: str, box_id: str) -> None:
        # Two Chromiums on one profile would corrupt it; and a start clears its locks.
        running = self._containers(
            {"label": [f"{LABEL_PROFILE}={profile}", f"{LABEL_RUNTIME}={self.name}"]}, all=False
        )
        others = [c.labels.get(LABEL_BOX) for c in running if c.labels.get(LABEL_BOX) != box_id]
        if others:
            raise Denied(f"browser profile {profile!r} is in use by {', '.join(map(str, others))}")

    async def _await_ready(self, box_id: str, run_dir: Path, screens: int) -> Started:
        desktop = await await_agent(
            box_id,
            run_dir / "agent.sock",
            self.ready_timeout_s,
            # A container throttled by its CPU quota can be slow to listen; asking the
            # engine whether it still runs is itself slow, so not at every poll.
            check_alive=lambda: self._check_running(box_id),
            check_every_s=STATE_POLL_S,
            logs=lambda: self._logs_tail(box_id),
        )
        self._desktops.keep(box_id, desktop)
        self._paused.discard(box_id)
        return _desktop_at(run_dir, screens)

    async def _logs_tail(self, box_id: str) -> str:
        container = await self._call(self._find, box_id)
        return "" if container is None else await self._call(_log_tail, container)

    async def _check_running(self, box_id: str) -> None:
        """Raise, quoting its log, when the box's container ended."""
        container = await self._call(self._get, box_id)
        if container.status in ("exited", "dead"):
            tail = await self._call(_log_tail, container)
            code = container.attrs.get("State", {}).get("ExitCode")
            raise Unavailable(
                f"box {box_id} ended with {code} before its desktop was up: {tail}",
                retryable=False,
            )

    async def _drop_desktop(self, box_id: str) -> None:
        await self._desktops.drop(box_id)

    # The engine, in threads

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        def call() -> T:
            with engine_errors():
                return fn(*args, **kwargs)

        return await asyncio.to_thread(call)

    def _find(self, box_id: str) -> Any:
        try:
            container = self.client.containers.get(container_name(box_id))
        except docker.errors.NotFound:
            return None
        if container.labels.get(LABEL_BOX) != box_id:
            return None
        return container

    def _get(self, box_id: str) -> Any:
        container = self._find(box_id)
        if container is None:
            raise NotFound(f"the docker runtime has no box {box_id}")
        return container

    def _remove(self, box_id: str) -> None:
        container = self._find(box_id)
        run_dir = self._run_dir(box_id)
        if container is not None:
            run_dir = Path(container.labels.get(LABEL_RUN_DIR) or run_dir)
            with suppress(docker.errors.NotFound):
                container.remove(force=True, v=True)
        network.end(run_dir.parent)
        shutil.rmtree(run_dir.parent if run_dir.name == "run" else run_dir, ignore_errors=True)

    # Locks


def docker_runtime_if_engine_answers(
    boxes_dir: Path,
    server_id: str | None,
    *,
    base_image: str = DEFAULT_BASE_IMAGE,
    timeout_s: float = PING_TIMEOUT_S,
) -> DockerRuntime | None:
    """The docker runtime when a Docker Engine answers (`DOCKER_HOST`, else the local
    socket), else None. Its boxes' base image is `base_image` (the server passes
    `HOLM_DOCKER_BASE_IMAGE` from its Config). Blocks up to `timeout_s` (an absent
    engine's socket fails at once): call it at startup or in a thread."""
    client = local_engine(timeout_s)
    if client is None:
        return None
    try:
        return DockerRuntime(boxes_dir, server_id, client=client, base_image=base_image)
    except HolmError:
        client.close()
        return None


def local_engine(timeout_s: float = PING_TIMEOUT_S) -> docker.DockerClient | None:
    """A client of this host's engine (`DOCKER_HOST`, else the local socket) when it
    answers, else None. Blocks up to `timeout_s`."""
    try:
        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        return None
    client.api.timeout = ENGINE_TIMEOUT_S
    return client


def _desktop_at(run_dir: Path, screens: int) -> Started:
    """Where a box's desktop answers: its agent's sockets in the run folder."""
    return Started(
        viewer_urls=[f"unix:{run_dir / f'vnc-{i}.sock'}" for i in range(screens)],
        devtools_url=f"unix:{run_dir / 'devtools.sock'}",
    )


def _runtime_box(
    container: Any, desktop_of: Callable[[dict[str, str], int], Started]
) -> RuntimeBox:
    labels: dict[str, str] = container.labels
    status = container.status
    state: Literal["running", "paused", "stopped"] = (
        "running" if status == "running" else "paused" if status == "paused" else "stopped"
    )
    spec = _decode_or_none(_spec_decoder, labels.get(LABEL_SPEC))
    desktop = (
        desktop_of(labels, spec.desktop.screens)
        if state != "stopped" and spec is not None
        else Started()
    )
    return RuntimeBox(
        box_id=labels[LABEL_BOX],
        state=state,
        server_id=labels.get(LABEL_SERVER) or None,
        spec=spec,
        placement=_decode_or_none(_placement_decoder, labels.get(LABEL_PLACEMENT)),
        created_at_ms=int(labels[LABEL_CREATED]) if labels.get(LABEL_CREATED) else None,
        owner=labels.get(LABEL_OWNER) or None,
        viewer_urls=desktop.viewer_urls,
        devtools_url=desktop.devtools_url,
    )


def _decode_or_none(decoder: msgspec.json.Decoder[T], text: str | None) -> T | None:
    if not text:
        return None
    try:
        return decoder.decode(text)
    except msgspec.DecodeError:
        return None


def _box_dir(container: Any) -> Path:
    """The box's folder on the host: its run folder's parent, which the box cannot reach."""
    return Path(container.labels[LABEL_RUN_DIR]).parent


def _log_tail(container: Any) -> str:
    raw: bytes = container.logs(tail=LOG_TAIL_LINES)
    return raw.decode(errors="replace").strip() or "(no log)"


def _empty(folder: Path) -> None:
    """Remove what is in `folder`, keeping the folder (it is a bind-mount source)."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


__all__ = [
    "DockerRuntime",
    "container_name",
    "docker_runtime_if_engine_answers",
    "local_engine",
    "owned_profile",
    "profile_volume",
]
