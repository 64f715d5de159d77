"""The `local` runtime: each box is a set of processes on this machine under bubblewrap.

A box is its folder (`records.py`); its processes are one sandbox (`sandbox.py`) whose
in-box agent brings the desktop up and answers on `run/agent.sock`. The sandbox is not tied
to holmd's life, so boxes outlive a restart and a new runtime object on the same state dir
finds them again.

Errors, as the engine sees them:
- `NotFound`: the runtime has no box by that id (its folder is not there).
- `Denied`: a lifecycle step the box's state does not allow (pause a stopped box,
  start a running one).
- `ScreenUnavailable`: the desktop of a paused or stopped box.
- `Transport`: the box's processes ended on their own, or its agent cannot be reached.
- `Unavailable` / `Timeout`: a desktop that did not come up (the message quotes its log).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from holm.adapters.agent_desktop import AgentConnections, AgentDesktop
from holm.adapters.agent_ready import await_agent
from holm.adapters.base import STREAM_LIMIT, Desktop, Stream
from holm.adapters.box_locks import BoxLocks
from holm.adapters.features import (
    FEATURE_PACKAGES,
    WAYLAND_FEATURE_PACKAGES,
    WAYLAND_PACKAGES,
    WAYLAND_WITHOUT,
)
from holm.adapters.local import agent_bytecode, network, procs
from holm.adapters.local import room as room_of
from holm.adapters.local.box_ids import free_box_uid
from holm.adapters.local.host_packages import refuse_missing
from holm.adapters.local.limits import (
    DEFAULT_PIDS_MAX,
    Cgroups,
    joining_argv,
    parse_cpus,
    parse_memory,
    remove_groups,
)
from holm.adapters.local.priority import at_box_priority
from holm.adapters.local.records import (
    BoxPaths,
    BoxRecord,
    host_x_displays,
    locked,
    pick_display_base,
    read_record,
    read_records,
    valid_box_id,
    write_record,
)
from holm.adapters.local.sandbox import (
    AGENT_PYTHON,
    LaunchFailed,
    SandboxPlan,
    box_env,
    bwrap_argv,
    holm_package_dir,
    launch,
)
from holm.adapters.refusals import refuse_what_no_runtime_runs
from holm.adapters.run_sockets import open_run_socket
from holm.adapters.to_the_end import in_thread
from holm.errors import (
    BadRequest,
    Denied,
    HolmError,
    NotFound,
    ScreenUnavailable,
    Transport,
    Unavailable,
    Unsupported,
)
from holm.wire.runtime import Capabilities, Room, RuntimeBox, Started, StreamKind
from holm.wire.spec import MAX_SCREENS, Placement, Spec, canonical_spec, packages_of_app

ProcessState = Literal["running", "paused", "stopped"]

DEFAULT_DISPLAY_BASE = 100
DEFAULT_DISPLAY_COUNT = 200
READY_TIMEOUT_S = 90.0
STOP_GRACE_S = 5.0
LOG_TAIL_BYTES = 2000
RUN_LOG_TAIL_BYTES = 400
BOOTS_AT_ONCE = 4
log = logging.getLogger(__name__)
# bwrap's set-up of the loopback in a box's new network namespace fails now and then
# while boxes boot side by side ("bwrap: loopback: Failed RTM_NEWADDR: No child
# processes", about one boot in a hundred on a busy host; others see it intermittently
# too): it fails before anything of the box ran, so the box is brought up once more.
LOOPBACK_FAILED = "bwrap: loopback: Failed RTM_NEWADDR"

# Chromium refuses a profile whose lock names a live process of the same host; after a
# stop the lock's pid may be reused by an unrelated process of the new namespace.
CHROMIUM_LOCKS = ("SingletonLock", "SingletonSocket", "SingletonCookie")


def _now_ms() -> int:
    return int(time.time() * 1000)


class LocalRuntime:
    name = "local"

    def __init__(
        self,
        boxes_dir: Path,
        server_id: str | None = None,
        *,
        display_base: int = DEFAULT_DISPLAY_BASE,
        display_count: int = DEFAULT_DISPLAY_COUNT,
        ready_timeout_s: float = READY_TIMEOUT_S,
        stop_grace_s: float = STOP_GRACE_S,
        chromium: bool = True,
        cgroups: Cgroups | None = None,
        pids_max: int | None = DEFAULT_PIDS_MAX,
        max_boxes: int | None = None,
        boots_at_once: int | None = BOOTS_AT_ONCE,
    ) -> None:
        self.boxes_dir = boxes_dir
        self.server_id = server_id
        self.display_base = display_base
        self.display_count = display_count
        self.ready_timeout_s = ready_timeout_s
        self.stop_grace_s = stop_grace_s
        # Without Chromium a box is only Xvfb, openbox and x11vnc: for tests and benches
        # that do not need a browser.
        self.chromium = chromium
        self.cgroups = Cgroups() if cgroups is None else cgroups
        # The most tasks a box may have at once, where a pids controller is there.
        self.pids_max = pids_max
        # HOLM_MAX_BOXES: the most boxes whose desktops run at once (spares included).
        self.max_boxes = max_boxes
        # The most boxes booting at once (None: no bound); the rest queue, in order.
        self._boots = asyncio.Semaphore(boots_at_once or 1 << 30)
        # Boxes given room and not made yet (room.py), with their screens; and what holmd
        # held before it had boxes, to tell the descriptors a box takes.
        self._reserved: dict[str, int] = {}
        self._fds_at_start = len(os.listdir("/proc/self/fd"))
        self._costs = room_of.measure([], 0, 0)
        boxes_dir.mkdir(parents=True, exist_ok=True)
        self._desktops = AgentConnections()
        # Boxes this runtime paused (or is pausing): their desktops are looked at afresh.
        self._paused: set[str] = set()
        # The outer bwrap of each box this object started, reaped when the box ends.
        self._children: dict[str, subprocess.Popen[bytes]] = {}
        # The network of each box this object is launching, until it is up.
        self._attaching: dict[str, network.Attaching] = {}
        self._locks = BoxLocks()
        # So that no box compiles the agent's modules at its start (agent_bytecode.py).
        agent_bytecode.compile_once(AGENT_PYTHON, holm_package_dir())

    def can(self) -> Capabilities:
        return Capabilities(
            pause=True,
            stop=True,
            persistent=True,
            network_off=True,
            packages=False,
            memory_limit=self.cgroups.memory,
            cpu_limit=self.cgroups.cpu,
            max_screens=MAX_SCREENS,
            # The agent relays each box's Chromium DevTools (docs/runtimes.md).
            pages=self.chromium,
            viewer=True,
            wayland=True,
            wayland_without=list(WAYLAND_WITHOUT),
            # A browser profile is a container runtime's named volume.
            profile=False,
        )

    # Room for boxes (room.py)

    async def room(self, spec: Spec | None = None) -> Room:
        """How many more boxes of `spec` (the default: one screen) fit, measuring what the
        boxes that run take."""
        screens = (spec or Spec()).desktop.screens
        return (await self._room(screens, measure=True))[0]

    async def reserve(self, box_id: str, spec: Spec) -> None:
        """Hold room for a box about to be made, or refuse it with `Unavailable` naming the
        limit that does not let it fit. Held until `create` of it ends (or `release`)."""
        if box_id in self._reserved:
            return
        screens = spec.desktop.screens
        found, host = await self._room(screens, measure=False)
        if found.boxes <= 0:
            why = room_of.refusal(found, host, self._costs, self.max_boxes)
            raise Unavailable(f"no room for another local box: {why}")
        self._reserved[box_id] = screens

    def release(self, box_id: str) -> None:
        self._reserved.pop(box_id, None)

    async def _room(self, screens: int, *, measure: bool) -> tuple[Room, room_of.Host]:
        running, free_displays, trees, host = await in_thread(self._host_now, measure)
        if measure:
            self._costs = room_of.measure(trees, host.open_fds, self._fds_at_start)
        # Counted after the thread, on the loop, so two boxes reserved at once see each other.
        starting = [box_id for box_id in self._reserved if box_id not in running]
        given = sum(self._reserved[box_id] for box_id in starting)
        found = room_of.room(
            host,
            self._costs,
            running=len(running) + len(starting),
            starting=len(self._reserved),
            max_boxes=self.max_boxes,
            free_displays=max(free_displays - given, 0),
            screens=screens,
        )
        return found, host

    def _host_now(self, measure: bool) -> tuple[set[str], int, list[list[int]], room_of.Host]:
        """The boxes whose desktops run or are being launched, the free display numbers,
        the processes of each running box (when measuring), and the host's figures."""
        running: set[str] = set()
        taken = host_x_displays()
        trees: list[list[int]] = []
        for record in read_records(self.boxes_dir):
            if record.display_base is None:
                continue
            alive = self._box_state(record) != "stopped"
            if alive or record.init_pid is None:
                running.add(record.box_id)
                taken.update(range(record.display_base, record.display_base + _screens(record)))
            if alive and measure and record.init_pid is not None and record.init_start:
                trees.append(procs.tree(record.init_pid, record.init_start))
        window = range(self.display_base, self.display_base + self.display_count)
        free = sum(1 for display in window if display not in taken)
        return running, free, trees, room_of.read_host()

    # Lifecycle

    async def create(
        self, box_id: str, spec: Spec, placement: Placement, *, owner: str | None = None
    ) -> Started:
        return await self._create(box_id, spec, placement, spare=False, owner=owner)

    async def create_spare(self, box_id: str, spec: Spec, placement: Placement) -> Started:
        return await self._create(box_id, spec, placement, spare=True)

    async def claim(
        self, box_id: str, placement: Placement, *, owner: str | None = None
    ) -> Started:
        async with self._locks.lifecycle(box_id):
            paths, record = self._record(box_id)
            if not record.spare:
                raise NotFound(f"the local runtime has no spare box {box_id}")
            if self._box_state(record) != "running":
                raise Transport(f"the spare box {box_id} is not running", retryable=False)
            # Its folder, displays and processes stay as they are: only whose box it is
            # changes, and from when its lifetime counts.
            record.spare = False
            record.placement = placement
            record.owner = owner
            record.created_at_ms = _now_ms()
            await in_thread(write_record, paths.record, record)
            return self._started(paths, record)

    async def _create(
        self,
        box_id: str,
        spec: Spec,
        placement: Placement,
        *,
        spare: bool,
        owner: str | None = None,
    ) -> Started:
        await self.reserve(box_id, spec)  # nothing is made of a box that does not fit
        try:
            return await self._create_reserved(box_id, spec, placement, spare=spare, owner=owner)
        finally:
            # Made (and counted by its record) or failed (and nothing of it is left).
            self.release(box_id)

    async def _create_reserved(
        self,
        box_id: str,
        spec: Spec,
        placement: Placement,
        *,
        spare: bool,
        owner: str | None = None,
    ) -> Started:
        # On a thread: it may ask dpkg (host_packages.py), ~20 ms the loop would wait.
        await in_thread(self._refuse, box_id, spec, placement)
        paths = BoxPaths(self.boxes_dir, box_id)
        record = BoxRecord(
            box_id=box_id,
            spec=spec,
            placement=placement,
            server_id=self.server_id,
            created_at_ms=_now_ms(),
            owner=owner,
            spare=spare,
        )
        async with self._locks.lifecycle(box_id):
            await in_thread(self._make_folder, paths, record)
            try:
                return await self._bring_up(paths, record)
            except BaseException:
                await in_thread(self._remove, paths)
                raise

    async def pause(self, box_id: str) -> None:
        async with self._locks.lifecycle(box_id):
            record = self._live_record(box_id, Denied)
            assert record.init_pid is not None and record.init_start is not None
            # Before the freeze: a desktop asked for meanwhile is looked at afresh.
            self._paused.add(box_id)
            await in_thread(procs.freeze, record.init_pid, record.init_start)

    async def resume(self, box_id: str) -> None:
        async with self._locks.lifecycle(box_id):
            record = self._live_record(box_id, Denied)
            assert record.init_pid is not None and record.init_start is not None
            await in_thread(procs.thaw, record.init_pid, record.init_start)
            self._paused.discard(box_id)

    async def stop(self, box_id: str) -> None:
        async with self._locks.lifecycle(box_id):
            paths, record = self._record(box_id)
            if record.state == "stopped":
                return
            await self._drop_desktop(box_id)
            await in_thread(self._end, paths, record)

    async def start(self, box_id: str) -> Started:
        async with self._locks.lifecycle(box_id):
            paths, record = self._record(box_id)
            if self._box_state(record) != "stopped":
                raise Denied(f"box {box_id} is running; stop it before starting it again")
            # A box that crashed (or whose host restarted) is still marked running: end what
            # is left of it first; its home survives that only when it is persistent. A box
            # stopped with `stop` keeps its files whatever its placement.
            if record.state != "stopped":
                await in_thread(self._end, paths, record, keep_home=record.placement.persistent)
            await self.reserve(box_id, record.spec)
            try:
                return await self._bring_up(paths, record)
            finally:
                self.release(box_id)

    async def delete(self, box_id: str) -> None:
        async with self._locks.lifecycle(box_id):
            await self._drop_desktop(box_id)
            await in_thread(self._remove, BoxPaths(self.boxes_dir, box_id))
        self._locks.forget(box_id)

    def _list(self) -> list[RuntimeBox]:
        return [self._listed(r) for r in read_records(self.boxes_dir)]

    def _listed(self, record: BoxRecord) -> RuntimeBox:
        state = self._box_state(record)
        paths = BoxPaths(self.boxes_dir, record.box_id)
        desktop = Started() if state == "stopped" else self._started(paths, record)
        return RuntimeBox(
            box_id=record.box_id,
            state=state,
            server_id=record.server_id,
            spec=record.spec,
            placement=record.placement,
            created_at_ms=record.created_at_ms,
            owner=record.owner,
            spare=record.spare,
            viewer_urls=desktop.viewer_urls,
            devtools_url=desktop.devtools_url,
        )

    async def list(self) -> list[RuntimeBox]:
        listed = await asyncio.to_thread(self._list)
        running = [box.box_id for box in listed if box.state == "running"]
        for box_id in await asyncio.to_thread(self._without_network, running):
            await self._renew_network(box_id)
        return listed

    def _without_network(self, box_ids: Sequence[str]) -> Sequence[str]:
        return [box_id for box_id in box_ids if self._lost_network(box_id) is not None]

    async def _renew_network(self, box_id: str) -> None:
        """Give a running box whose pasta ended (it crashed, or was killed) a new one: the
        box had no way out since, and would have none until a stop and a start. The
        reaper lists the boxes every 30 s, and a restarted holmd at once. `list` looks for
        such boxes without their locks, which a create holds until the box is ready."""
        async with self._locks.lifecycle(box_id):
            try:
                await in_thread(self._attach_again, box_id)
            except (network.NetworkFailed, OSError) as exc:
                log.warning("box %s: its network could not come back: %s", box_id, exc)

    def _lost_network(self, box_id: str) -> BoxRecord | None:
        """The record of the box, if it runs with a pasta recorded as up that has ended."""
        record = read_record(BoxPaths(self.boxes_dir, box_id).record)
        if record is None or record.net_pidfile is not None:
            return None
        pid, start = record.net_pid, record.net_start
        if pid is None or start is None or box_id in self._attaching:
            return None
        if self._box_state(record) != "running" or procs.is_alive(pid, start):
            return None
        return record

    def _attach_again(self, box_id: str) -> None:
        record = self._lost_network(box_id)
        if record is None or record.init_pid is None:
            return
        paths = BoxPaths(self.boxes_dir, box_id)
        attaching = network.attach(record.init_pid, record.host_uid, paths.log, again=True)
        record.net_pidfile = str(attaching.pidfile)
        write_record(paths.record, record)
        try:
            record.net_pid, record.net_start = attaching.wait()
        finally:
            record.net_pidfile = None
            write_record(paths.record, record)
        log.info("box %s: its pasta had ended; a new one serves it", box_id)

    async def open_stream(
        self, box_id: str, kind: StreamKind, screen: int = 0, *, limit: int = STREAM_LIMIT
    ) -> Stream:
        paths, _ = self._record(box_id)
        if kind == "devtools" and not self.chromium:
            raise Unsupported("this local runtime starts no Chromium: it has no DevTools")
        return await open_run_socket(paths.run, kind, screen, limit)

    async def desktop(self, box_id: str) -> Desktop:
        async with self._locks.connect(box_id):
            # Every action and frame asks: a box whose agent is connected and that this
            # runtime did not pause is answered without reading its record and its
            # processes' state (about 0.12 ms on the event loop). A box whose processes
            # ended has lost its connection, and is looked at afresh.
            live = self._desktops.live(box_id)
            if live is not None and box_id not in self._paused:
                return live
            record = self._live_record(box_id, ScreenUnavailable)
            assert record.init_pid is not None and record.init_start is not None
            if procs.is_frozen(record.init_pid, record.init_start):
                raise ScreenUnavailable(f"box {box_id} is paused; resume it first")
            live = self._desktops.live(box_id)
            if live is not None:
                return live
            socket_path = BoxPaths(self.boxes_dir, box_id).agent_socket
            return await self._desktops.connect(box_id, socket_path)

    async def install_apps(self, box_id: str, apps: Mapping[str, Sequence[str]]) -> None:
        """A local box's programs are the host's: the apps are there when the host has
        their packages, and a box cannot install any."""
        self._live_record(box_id, Denied)
        await asyncio.to_thread(
            refuse_missing, {f"app {name}": pkgs for name, pkgs in apps.items()}
        )

    async def close(self) -> None:
        """Let go of the boxes' agents; the boxes themselves keep running."""
        await self._desktops.close()

    # What a box is

    def _refuse(self, box_id: str, spec: Spec, placement: Placement) -> None:
        if not valid_box_id(box_id):
            raise BadRequest(f"{box_id!r} cannot name a local box")
        paths = BoxPaths(self.boxes_dir, box_id)
        refuse_what_no_runtime_runs(
            self.name, spec, placement, paths.vnc_socket(MAX_SCREENS - 1), ("x11", "wayland")
        )
        if spec.desktop.packages:
            raise Unsupported("the local runtime cannot install packages; use the docker runtime")
        if placement.profile is not None:
            raise Unsupported(
                "the local runtime cannot give a browser profile (container runtimes only);"
                " use the docker runtime"
            )
        if placement.memory is not None and not self.cgroups.memory:
            raise Unsupported("this machine gives the local runtime no memory cgroup to limit")
        if placement.cpus is not None and not self.cgroups.cpu:
            raise Unsupported("this machine gives the local runtime no cpu cgroup to limit")
        if spec.policy.network and not network.available():
            raise Unsupported(
                "a local box with policy.network needs pasta (scripts/setup builds it) "
                "to reach out from its own network namespace"
            )
        canonical = canonical_spec(spec)
        needs: dict[str, Sequence[str]] = {
            f"feature {feature}": FEATURE_PACKAGES[feature]
            for feature in canonical.desktop.features or []
        }
        needs.update(
            (f"app {name}", packages_of_app(name, app)) for name, app in canonical.apps.items()
        )
        if canonical.desktop.server == "wayland":
            needs["a wayland desktop"] = WAYLAND_PACKAGES
            for feature in canonical.desktop.features or []:
                more = WAYLAND_FEATURE_PACKAGES.get(feature, ())
                needs[f"feature {feature}"] = (*FEATURE_PACKAGES[feature], *more)
        refuse_missing(needs)

    def _record(self, box_id: str) -> tuple[BoxPaths, BoxRecord]:
        paths = BoxPaths(self.boxes_dir, box_id)
        record = read_record(paths.record) if valid_box_id(box_id) else None
        if record is None:
            raise NotFound(f"the local runtime has no box {box_id}")
        return paths, record

    def _live_record(self, box_id: str, stopped: type[HolmError]) -> BoxRecord:
        """The record of a box whose processes run (paused or not); `stopped` is raised
        for a box that was stopped."""
        _, record = self._record(box_id)
        if record.state == "stopped":
            raise stopped(f"box {box_id} is stopped; start it first")
        if self._box_state(record) == "stopped":
            raise Transport(
                f"the processes of box {box_id} ended on their own; start it again",
                retryable=False,
            )
        return record

    def _box_state(self, record: BoxRecord) -> ProcessState:
        if record.state == "stopped" or record.init_pid is None or record.init_start is None:
            return "stopped"
        child = self._children.get(record.box_id)
        if child is not None:
            # Reap an outer bwrap whose box ended on its own, so it leaves no zombie.
            child.poll()
        if not procs.is_alive(record.init_pid, record.init_start):
            return "stopped"
        return "paused" if procs.is_frozen(record.init_pid, record.init_start) else "running"

    # Bringing a desktop up and down

    def _make_folder(self, paths: BoxPaths, record: BoxRecord) -> None:
        # Under the lock, so that two boxes made at once see each other's range.
        with locked(self.boxes_dir):
            record.box_uid = free_box_uid(r.host_uid for r in read_records(self.boxes_dir))
            if record.box_uid is None:
                raise Unavailable("every range of host ids for local boxes is in use")
            try:
                paths.dir.mkdir()
            except FileExistsError:
                raise BadRequest(f"the local runtime already has a box {record.box_id}") from None
            paths.home.mkdir(mode=0o700)
            paths.run.mkdir(mode=0o700)
            write_record(paths.record, record)

    async def _bring_up(self, paths: BoxPaths, record: BoxRecord) -> Started:
        # Boots past `boots_at_once` wait for their turn: on a small host, every box
        # booting at once is that many more processes between holmd and a core.
        async with self._boots:
            try:
                return await self._boot(paths, record)
            except Unavailable as exc:
                if LOOPBACK_FAILED not in str(exc):
                    raise
                # Before anything of the box ran: end what the first try left, try again.
                log.warning("box %s: %s; bringing it up once more", record.box_id, exc)
                await in_thread(self._end, paths, record)
                return await self._boot(paths, record)

    async def _boot(self, paths: BoxPaths, record: BoxRecord) -> Started:
        record = await in_thread(self._launch, paths, record)
        proc = self._children[record.box_id]
        attaching = self._attaching.pop(record.box_id, None)
        if attaching is not None:
            # The box started meanwhile; it is not ready before its network is up.
            try:
                record.net_pid, record.net_start = await in_thread(attaching.wait)
            except network.NetworkFailed as exc:
                tail = await in_thread(_tail, paths.log)
                message = _first_bwrap_error(f"box {record.box_id}: {exc}: {tail}", tail)
                raise Unavailable(message) from None
            record.net_pidfile = None
            await in_thread(write_record, paths.record, record)
        desktop = await self._await_ready(paths, record, proc)
        self._desktops.keep(record.box_id, desktop)
        return self._started(paths, record)

    def _started(self, paths: BoxPaths, record: BoxRecord) -> Started:
        screens = record.spec.desktop.screens
        devtools = f"unix:{paths.run / 'devtools.sock'}" if self.chromium else None
        return Started(
            viewer_urls=[f"unix:{paths.vnc_socket(i)}" for i in range(screens)],
            devtools_url=devtools,
        )

    def _launch(self, paths: BoxPaths, record: BoxRecord) -> BoxRecord:
        """Give the box its displays and cgroups, clean its folder for a new desktop, and
        start its sandbox; the record says all of it before this returns."""
        spec, placement = canonical_spec(record.spec), record.placement
        desktop = spec.desktop
        _empty(paths.run)
        for lock in paths.home.glob(".holm/chromium-*/Singleton*"):
            if lock.name in CHROMIUM_LOCKS:
                lock.unlink(missing_ok=True)
        uid = record.host_uid
        _own(paths.home, uid)
        _own(paths.run, uid)
        with locked(self.boxes_dir):
            base = self._free_display_base(desktop.screens)
            record.display_base = base
            record.state = "running"
            record.init_pid = record.init_start = record.bwrap_pid = None
            record.net_pid = record.net_start = None
            write_record(paths.record, record)
        record.cgroups = self.cgroups.make(
            record.box_id,
            None if placement.memory is None else parse_memory(placement.memory),
            None if placement.cpus is None else parse_cpus(placement.cpus),
            self.pids_max,
        )
        # Recorded before the launch, so that a failed launch's cleanup removes them.
        write_record(paths.record, record)
        plan = SandboxPlan(
            home=paths.home,
            run_dir=paths.run,
            network=spec.policy.network,
            screens=desktop.screens,
            width=desktop.width or 0,
            height=desktop.height or 0,
            display_base=base,
            chromium=self.chromium,
            apps=spec.apps,
            features=list(desktop.features or []),
            box_uid=uid,
            server_id=self.server_id,
            display_server=desktop.server,
        )

        def attach_network(init_pid: int) -> network.Attaching:
            attaching = network.attach(init_pid, uid, paths.log)
            # Should holmd die before pasta is up, the next one ends it by this file.
            record.net_pidfile = str(attaching.pidfile)
            write_record(paths.record, record)
            return attaching

        try:
            launched = launch(
                at_box_priority(joining_argv(record.cgroups, bwrap_argv(plan))),
                paths.log,
                env=box_env(plan),
                box_uid=uid,
                attach_network=attach_network if plan.network else None,
            )
        except LaunchFailed as exc:
            tail = _tail(paths.log)
            message = _first_bwrap_error(f"box {record.box_id}: {exc}: {tail}", tail)
            raise Unavailable(message) from None
        self._children[record.box_id] = launched.process
        record.bwrap_pid = launched.process.pid
        record.init_pid, record.init_start = launched.init_pid, launched.init_start
        if launched.network is not None:
            self._attaching[record.box_id] = launched.network
        record.started_at_ms = _now_ms()
        write_record(paths.record, record)
        return record

    def _free_display_base(self, screens: int) -> int:
        taken = host_x_displays()
        for other in read_records(self.boxes_dir):
            if other.display_base is not None and self._box_state(other) != "stopped":
                taken.update(range(other.display_base, other.display_base + _screens(other)))
            elif other.display_base is not None and other.init_pid is None:
                # Being launched right now by another runtime on this state dir.
                taken.update(range(other.display_base, other.display_base + _screens(other)))
        base = pick_display_base(taken, screens, self.display_base, self.display_count)
        if base is None:
            raise Unavailable(
                f"no {screens} free X displays from :{self.display_base} "
                f"to :{self.display_base + self.display_count - 1}"
            )
        return base

    async def _await_ready(
        self, paths: BoxPaths, record: BoxRecord, proc: subprocess.Popen[bytes]
    ) -> AgentDesktop:
        async def check_alive() -> None:
            if proc.poll() is not None:
                tail = await asyncio.to_thread(_tail, paths.log)
                ended = f"box {record.box_id} ended with {proc.returncode} before its agent "
                raise Unavailable(
                    _first_bwrap_error(f"{ended}listened: {tail}", tail), retryable=False
                )

        return await await_agent(
            record.box_id,
            paths.agent_socket,
            self.ready_timeout_s,
            check_alive=check_alive,
            logs=lambda: asyncio.to_thread(_run_logs_tail, paths),
        )

    async def _drop_desktop(self, box_id: str) -> None:
        self._paused.discard(box_id)
        await self._desktops.drop(box_id)

    def _end(self, paths: BoxPaths, record: BoxRecord, *, keep_home: bool = True) -> None:
        """End the box's processes and release what they held; the home stays unless
        `keep_home` is false (a non-persistent box that did not stop by `stop`)."""
        if record.init_pid is not None and record.init_start is not None:
            procs.end(record.init_pid, record.init_start, self.stop_grace_s)
        if record.net_pid is not None and record.net_start is not None:
            procs.end_one(record.net_pid, record.net_start, self.stop_grace_s)
        attaching = self._attaching.pop(record.box_id, None)
        if attaching is not None:
            attaching.cancel()
        if record.net_pidfile is not None:
            network.end_left_behind(Path(record.net_pidfile))
        child = self._children.pop(record.box_id, None)
        if child is not None:
            child.wait()
        remove_groups(record.cgroups)
        _empty(paths.run)
        if not keep_home:
            _empty(paths.home)
        record.state = "stopped"
        record.display_base = record.init_pid = record.init_start = record.bwrap_pid = None
        record.net_pid = record.net_start = record.net_pidfile = None
        record.cgroups = []
        write_record(paths.record, record)

    def _remove(self, paths: BoxPaths) -> None:
        record = read_record(paths.record)
        if record is not None:
            self._end(paths, record)
        shutil.rmtree(paths.dir, ignore_errors=True)

    # Locks


def _screens(record: BoxRecord) -> int:
    return record.spec.desktop.screens


def _empty(folder: Path) -> None:
    """Remove what is in `folder`, keeping the folder (it is a bind-mount source)."""
    if not folder.exists():
        folder.mkdir(parents=True)
        return
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _own(folder: Path, uid: int) -> None:
    """Give `folder` to the box's host uid, with everything in it when it was not the
    box's yet (a persistent home made before boxes had a uid of their own)."""
    if folder.stat().st_uid == uid:
        return
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            os.lchown(os.path.join(parent, name), uid, uid)
    os.chown(folder, uid, uid)
    folder.chmod(0o700)


def _run_logs_tail(paths: BoxPaths) -> str:
    logs = [paths.log, *sorted(paths.run.glob("*.log"))]
    return "\n".join(f"--- {log.name}: {_tail(log, RUN_LOG_TAIL_BYTES)}" for log in logs)


def _first_bwrap_error(message: str, log_tail: str) -> str:
    """`message`, led by bwrap's own last error in the box's log ("bwrap: …") when it wrote
    one: that is the cause, and what failed after it (an `nsenter` into the namespace of a
    process gone, a write to its pipe) only its side effect."""
    said = [line.strip() for line in log_tail.splitlines() if line.startswith("bwrap: ")]
    return f"{said[-1]} ({message})" if said else message


def _tail(log: Path, size: int = LOG_TAIL_BYTES) -> str:
    """The end of a log, quoted in an error to the box's caller. The box writes its run
    folder: a log there may be its link to a file of the host (the token) or a FIFO that
    would hold this thread, so only a regular file is read, and never through a link."""
    try:
        fd = os.open(log, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return "(not a log)"
            f.seek(0, 2)
            f.seek(max(0, f.tell() - size))
            return f.read().decode(errors="replace").strip()
    except OSError:
        return "(no log)"
