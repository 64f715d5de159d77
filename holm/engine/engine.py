"""The command side: each operation checks the box's derived state, calls the runtime or the
box's desktop, and appends what happened; it answers only once its entries are durable.

Box state is never kept here: `Engine.box` and the list are the box projection that the
journal folds as it appends (and rebuilds from the store at start-up).

Concurrency: lifecycle operations on one box (pause, resume, stop, delete, removals by the
reaper) hold that box's lock; a batch holds its screen, so a second batch on the same screen
waits for the first, while batches on other screens, reads and `exec` run beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Literal

import msgspec

from holm.adapters.base import STREAM_LIMIT, AppInstaller, Desktop, HostRoom, Runtime, Stream
from holm.config import Config
from holm.errors import BadRequest, HolmError, NotFound, ScreenUnavailable, Unsupported
from holm.events.browser_states import BrowserStates
from holm.events.leases import leases_of
from holm.events.store import TraceStore
from holm.events.trace_keys import trace_keys_of
from holm.projections.box_state import BoxState
from holm.projections.events_feed import EventsFeed
from holm.projections.views import trace_view
from holm.secrets_box import SecretsBox
from holm.vnc_auth import fits, password_of
from holm.wire.actions import Action, KeyUp, MouseUp, Type, reads_only, type_of, uses_screen
from holm.wire.api import (
    ActionsRequest,
    ActionsResult,
    Catalog,
    ImageInfo,
    PoolView,
    PruneReport,
    TracePage,
    TraceView,
)
from holm.wire.entries import (
    PAGE_MAX,
    SERVER_TRACE,
    Acted,
    Actor,
    AppsInstalled,
    BoxCreated,
    BoxDeleted,
    BoxFailed,
    BoxGone,
    BoxPaused,
    BoxReady,
    BoxResumed,
    BoxStarted,
    BoxStopped,
    BoxUnreachable,
    Entry,
    ForkedFrom,
    ImageBuilt,
    TakeoverEnded,
    TakeoverStarted,
    acted_key,
)
from holm.wire.keys import normalized_action
from holm.wire.results import ActionResult
from holm.wire.runtime import Capabilities, FrameResult, Room, Started, StreamKind
from holm.wire.spec import (
    DEFAULT_LIFETIME_SECS,
    Placement,
    Spec,
    canonical_spec,
    spec_digest,
    validate_placement,
    validate_spec,
)
from holm.wire.values import PNG, Button, Encoding, Region

from . import guards
from .adoption import reconcile
from .batch import run_steps
from .catalog import app_packages_by_name, catalog
from .guards import boundary
from .jobs import JobQueue
from .journal import Journal, entry, now_ms, stored
from .named_secrets import (
    WorkspaceSecrets,
    missing_message,
    names_in,
    scrubbed_error,
    scrubbed_result,
    values_for,
    with_values,
)
from .ownership import Ownership
from .person_text import PersonText
from .pool import pool_of
from .reaper import every, reap
from .step_frames import StepFrames
from .trace_rules import recorded_alone
from .vendors import MakeRuntime, Vendors
from .watcher import FrameWatchers

log = logging.getLogger(__name__)

FRAME_POLL_SECS = 0.25
# The states a runtime that cannot be reached does not change: there is no desktop to lose.
_NOT_MARKED = ("starting", "failed", "unreachable")


def new_box_id() -> str:
    return "box_" + uuid.uuid4().hex


class Engine:
    """Every operation on boxes, for the HTTP routes and the replay interpreter alike."""

    def __init__(
        self,
        config: Config,
        store: TraceStore,
        runtimes: Mapping[str, Runtime],
        *,
        server_id: str,
        frame_poll_secs: float = FRAME_POLL_SECS,
        make_runtime: MakeRuntime | None = None,
    ) -> None:
        """`make_runtime` makes the runtimes of the vendor API (`POST /v1/runtimes`);
        without it, none can be added."""
        self.config = config
        self.store = store
        self.runtimes = dict(runtimes)
        self.server_id = server_id
        self.feed = EventsFeed.for_config(config)
        self.browser_states = BrowserStates.for_config(config)
        self.journal = Journal(store, self.feed)
        self.jobs = JobQueue(config)
        # Image builds queued and not yet done, by (runtime, digest): read as `building`
        # before their job begins (engine/images.py).
        self.queued_builds: dict[tuple[str, str], ImageInfo] = {}
        self.watchers = FrameWatchers(self.journal, store, self._desktop, frame_poll_secs)
        self.step_frames = StepFrames(
            self.journal,
            store,
            self.watchers.still,
            enabled=config.frame_before_steps == "on",
        )
        self._box_locks: dict[str, asyncio.Lock] = {}
        self._screen_locks: dict[tuple[str, int], asyncio.Lock] = {}
        self._loops: list[asyncio.Task[None]] = []
        self.pool = pool_of(
            config.pool,
            self.runtimes.get(config.default_runtime),
            new_box_id,
            record=self._record_server,
        )
        self.vendors = Vendors(self, make_runtime)
        self.secrets = WorkspaceSecrets(self)
        self.person_texts = PersonText(self, trace_keys_of(store))
        self._secrets_box: SecretsBox | None = None
        # With a postgres store, this holmd may be one of several (engine/ownership.py).
        leases = leases_of(
            store,
            server_id,
            config.replica_url or f"http://{config.server_addr}",
            config.lease_ms,
        )
        self.ownership = Ownership(self, leases) if leases is not None else None

    # Start and stop

    async def start(self) -> None:
        """Rebuild every box from the store, settle them with what the runtimes have
        (adopting, and forgetting what is lost), and start the watchers and, with an
        internal schedule, the reaper, the pruner and the job runner. With replicas, only
        the boxes whose lease this holmd holds (engine/ownership.py)."""
        if self.ownership is not None:
            await self.ownership.begin()
        await self.journal.rebuild()
        await self.vendors.load()
        await self.secrets.load()
        if self.ownership is not None:
            await self.ownership.settle()
            # Saved browser states every holmd reads, sealed (events/browser_states.py).
            self.browser_states.share(self.ownership.leases.store, await self.secrets_box())
        await reconcile(self)
        for state in self.journal.states():
            if not state.removed and state.state == "ready":
                self.watchers.start(state.id)
        if self.pool is not None:
            # The specs the pool names by digest that this server has seen boxes of.
            for spec in [Spec(), *(s.spec for s in self.journal.states() if s.spec)]:
                self.pool.learn(spec)
        if self.config.schedule == "internal":
            self.jobs.serve()
            self._loops = [
                asyncio.create_task(every(self.config.reap_secs, self.reap), name="reaper"),
                asyncio.create_task(every(self.config.prune_secs, self.prune), name="pruner"),
            ]
        if self.ownership is not None:
            self.ownership.serve()

    async def close(self) -> None:
        if self.ownership is not None:
            await self.ownership.close()
        if self.pool is not None:
            await self.pool.close()
        for task in self._loops:
            task.cancel()
        for task in self._loops:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.jobs.close()
        await self.watchers.close()
        await self.journal.close()
        await self.vendors.close()

    async def _record_server(self, entries: list[Entry]) -> None:
        """Append server-level facts (the pool's) to the server's own trace."""
        await self.journal.append(SERVER_TRACE, entries)

    # Reading

    async def box(self, box_id: str) -> BoxState:
        """The box as its trace says, removed ones included; NotFound when unknown."""
        return guards.known(self.state_of(box_id), box_id)

    def state_of(self, box_id: str) -> BoxState | None:
        """The box as this holmd folded its trace: one it runs (or removed), else, with
        replicas, one another holmd runs or ran, as the store's changes fold here
        (engine/elsewhere.py); None when unknown. A request that changes a box another
        holmd runs is forwarded to it (http/forwarding.py); one for a box another holmd
        removed is answered here, and the guards refuse it as its holmd would (410)."""
        state = self.journal.state(box_id)
        if state is None and self.ownership is not None:
            return self.ownership.elsewhere.state(box_id)
        return state

    def answers_here(self, box_id: str) -> bool:
        """Whether a request for the box is this holmd's to answer, not another's
        (http/forwarding.py, MCP's mcp/across.py): one it runs, or a removed one, which no
        holmd runs and whose state and trace read the same here as anywhere, even while
        the lease its holmd never let go of (it died) waits to be forgotten."""
        if self.journal.state(box_id) is not None:
            return True
        state = self.state_of(box_id)
        return state is not None and state.removed

    def desktop_seq(self, box_id: str) -> int | None:
        """Which desktop of the box is up, told by the seq of its last stop (`stopped_seq`;
        None before any stop or when the box is unknown): a viewer ticket opens only the
        desktop it was made for. It never raises, for routes that take no token must not
        tell which boxes there are."""
        state = self.journal.state(box_id)
        return None if state is None else state.stopped_seq

    def box_seen_by(self, box_id: str, workspace: str | None) -> BoxState:
        """The box, removed ones included, when `workspace` sees it (None: the server sees
        every box); NotFound, as for an absent box, when it is unknown or another's."""
        return guards.seen_by(self.state_of(box_id), box_id, workspace)

    def boxes(self, seen_by: str | None = None) -> list[BoxState]:
        """The boxes not removed, oldest first; with `seen_by`, that workspace's only."""
        live = [
            s
            for s in self.journal.states()
            if not s.removed and (seen_by is None or s.owner == seen_by)
        ]
        return sorted(live, key=lambda s: (s.created_at_ms, s.id))

    def capabilities(self) -> dict[str, Capabilities]:
        """What each of this server's runtimes can do, by name."""
        return {name: runtime.can() for name, runtime in self.runtimes.items()}

    async def room(self, name: str) -> Room | None:
        """How many more boxes the runtime `name` can take, where it can tell."""
        runtime = self._runtime_named(name)
        if not isinstance(runtime, HostRoom):
            return None
        return await boundary(runtime.room(), "measuring a runtime's room")

    def pool_status(self, runtime: str) -> list[PoolView] | None:
        """The warm pool's spares per spec when it keeps them on `runtime`, else None."""
        if self.pool is None or self.pool.runtime.name != runtime:
            return None
        return self.pool.status()

    def runtime_of(self, box_id: str) -> Runtime:
        state = guards.known(self.journal.state(box_id), box_id)
        return self._runtime_named(state.runtime)

    async def read_trace(
        self, box_id: str, after: int | None = None, limit: int = PAGE_MAX
    ) -> TracePage:
        """A page of a box's trace (also after the box was removed)."""
        limit = max(1, min(limit, PAGE_MAX))
        info = await stored(self.store.info(box_id))
        # The server's own trace (images) is not a box's.
        if box_id == SERVER_TRACE or (info is None and self.state_of(box_id) is None):
            raise NotFound(f"no trace for box {box_id}")
        entries = await stored(self.store.read(box_id, after, limit))
        last = await stored(self.store.max_seq(box_id))
        next_after = entries[-1].seq if entries else (-1 if after is None else after)
        return TracePage(
            entries=entries,
            next=next_after,
            more=next_after < last,
            incomplete=bool(info and info.incomplete),
            first_seq=info.first_seq if info else 0,
        )

    async def traces(self, seen_by: str | None = None) -> list[TraceView]:
        """Every trace the store keeps, removed boxes' and the server's own included, each
        with the box its entries fold to; with `seen_by`, that workspace's boxes' only (the
        server's own trace is the server token's). With replicas, every holmd's traces, the
        same through each: the store keeps them all, and each box is folded here too."""
        infos = await stored(self.store.traces())
        views = [(info, self.state_of(info.trace)) for info in infos]
        return [
            trace_view(info, box)
            for info, box in views
            if seen_by is None or (box is not None and box.owner == seen_by)
        ]

    async def trace_frame(self, box_id: str, frame_hash: str) -> bytes:
        png = await stored(self.store.get_frame(box_id, frame_hash))
        if png is None or box_id == SERVER_TRACE:
            raise NotFound(f"box {box_id} has no frame {frame_hash}")
        return png

    def catalog(self) -> Catalog:
        return catalog()

    # Lifecycle

    async def create_box(
        self,
        spec: Spec,
        placement: Placement,
        *,
        owner: str | None = None,
        forked_from: tuple[str, int | None] | None = None,
    ) -> BoxState:
        """Record `box_created` (and `forked_from` when given), then start the box. Answers
        the ready box; with queued jobs, the `starting` box at once. A runtime's refusal
        is recorded as `box_failed` and raised. A box the warm pool has a spare for is
        that spare, ready at once, under the spare's (new, unused) box ID."""
        spare = None
        if self.pool is not None and forked_from is None:
            self.pool.learn(spec)
            spare = self.pool.take(spec, self._placed(spec, placement)[1])
        try:
            box_id = await self.record_box(
                spec, placement, owner=owner, forked_from=forked_from, box_id=spare
            )
        except BaseException:
            if self.pool is not None and spare is not None:
                await self.pool.discard(spare)
            raise
        if self.pool is not None and spare is not None:
            taken = await self.box(box_id)
            started = await self.pool.claim(box_id, taken.placement, owner=taken.owner)
            if started is not None:
                await self._record_started(box_id, self.pool.runtime, started)
                return await self.box(box_id)
        if not self.queue(f"launch {box_id}", lambda: self._bring_up(box_id)):
            await self._bring_up(box_id)
        return await self.box(box_id)

    async def record_box(
        self,
        spec: Spec,
        placement: Placement,
        *,
        owner: str | None = None,
        forked_from: tuple[str, int | None] | None = None,
        box_id: str | None = None,
    ) -> str:
        """Check and record a new box without starting it (`start_recorded` does); under
        `box_id` when given (a spare's), else a new one. A new box that does not fit its
        runtime's host is refused here, before `box_created`: nothing of it is recorded or
        made (a spare is made already)."""
        runtime, placement = self._placed(spec, placement)
        if spec.policy.password_secret is not None:
            # The secret must be there now: a door whose password is missing opens to no one.
            await self._secret_password(owner, spec.policy.password_secret)
        room = runtime if box_id is None and isinstance(runtime, HostRoom) else None
        box_id = box_id or new_box_id()
        if room is not None:
            await boundary(room.reserve(box_id, spec), "finding room for a box")
        lifetime = placement.expires_after_secs or DEFAULT_LIFETIME_SECS
        created = entry(
            BoxCreated,
            "agent",
            box_id=box_id,
            runtime=runtime.name,
            spec=spec,
            placement=placement,
            spec_digest=spec_digest(spec),
            expires_at_ms=now_ms() + lifetime * 1000,
            owner=owner,
        )
        entries: list[Entry] = [created]
        if self.ownership is not None:
            # Before the box exists for anyone: no request finds it without an owner.
            await self.ownership.claim_new(box_id)
        if forked_from is not None:
            source, up_to = forked_from
            entries.append(entry(ForkedFrom, "agent", source=source, up_to=up_to))
        try:
            await self.journal.append(box_id, entries)
        except BaseException:
            if room is not None:
                room.release(box_id)
            raise
        return box_id

    def _placed(self, spec: Spec, placement: Placement) -> tuple[Runtime, Placement]:
        """Check a new box's spec and placement; answer its runtime and its placement
        with that runtime named, as it is kept (so a fork or a relaunch lands on the same
        runtime even if the server's default changes)."""
        problems = validate_spec(spec) + validate_placement(placement)
        if problems:
            raise BadRequest("; ".join(problems))
        if spec.policy.bind == "any" and not self.config.allow_public_viewers:
            # A door off loopback is a VNC server (DES, 8 characters) on the network: the
            # server's owner says yes to it, not a box's spec.
            raise Unsupported(
                'spec.policy.bind "any" publishes the box\'s VNC door off loopback, which '
                "this server does not allow: it needs HOLM_ALLOW_PUBLIC_VIEWERS=1"
            )
        runtime = self._runtime_named(placement.runtime or self.config.default_runtime)
        _check_can(runtime, spec, placement)
        if spec.policy.auth == "password" and not runtime.can().viewer:
            raise Unsupported(
                f'spec.policy.auth "password" opens a VNC door to the box\'s screens; the '
                f"{runtime.name} runtime has no viewer of them"
            )
        return runtime, msgspec.structs.replace(placement, runtime=runtime.name)

    async def start_recorded(self, box_id: str) -> BoxState:
        """Start a box `record_box` recorded; a refusal is recorded as `box_failed`."""
        await self._bring_up(box_id)
        return await self.box(box_id)

    async def fail_starting(self, box_id: str, why: str) -> None:
        """Record `box_failed` for a box still `starting` (a queued start given up)."""
        state = await self.box(box_id)
        runtime = self.runtimes.get(state.runtime)
        if isinstance(runtime, HostRoom):
            runtime.release(box_id)
        if state.state == "starting":
            await self.journal.append(box_id, [entry(BoxFailed, "system", why=why)])

    def queue(self, name: str, work: Callable[[], Awaitable[None]]) -> bool:
        """With queued jobs (`HOLM_SERVER_JOBS=queue`), run `work` as a job and answer
        true; otherwise false, and the caller does the work now."""
        if self.config.jobs != "queue":
            return False
        self.jobs.put(name, work)
        return True

    async def _bring_up(self, box_id: str) -> None:
        state = await self.box(box_id)
        runtime = self._runtime_named(state.runtime)
        if state.removed:
            if isinstance(runtime, HostRoom):
                runtime.release(box_id)  # deleted before its queued start
            return
        spec, placement = state.spec or Spec(), state.placement or Placement()
        try:
            created = runtime.create(box_id, spec, placement, owner=state.owner)
            started = await boundary(created, "creating a box")
        except HolmError as exc:
            await self.journal.append(box_id, [entry(BoxFailed, "system", why=exc.message)])
            raise
        await self._record_started(box_id, runtime, started)

    async def _record_started(self, box_id: str, runtime: Runtime, started: Started) -> None:
        if started.built is not None:
            # An image built on the way to the box is a build like the images API's.
            built = entry(
                ImageBuilt,
                "system",
                runtime=runtime.name,
                image=started.built.image,
                spec_digest=started.built.spec_digest,
            )
            await self.journal.append(SERVER_TRACE, [built])
        if (await self.box(box_id)).removed:
            # Deleted while it was starting: finish the removal.
            with contextlib.suppress(HolmError):
                await boundary(runtime.delete(box_id), "deleting a box")
            return
        ready = entry(
            BoxReady,
            "system",
            viewer_urls=started.viewer_urls,
            devtools_url=started.devtools_url,
        )
        await self.journal.append(box_id, [ready])
        self.watchers.start(box_id)

    async def delete_box(self, box_id: str) -> BoxState:
        """Remove the box from its runtime and record `box_deleted`; its trace stays."""
        async with self._lock(box_id):
            state = guards.live(self.state_of(box_id), box_id)
            await self.watchers.stop(box_id, last_look=True)
            runtime = self._runtime_named(state.runtime)
            with contextlib.suppress(NotFound):
                await boundary(runtime.delete(box_id), "deleting a box")
            await self.journal.append(box_id, [entry(BoxDeleted, "agent")])
        return await self.box(box_id)

    async def pause_box(self, box_id: str) -> BoxState:
        async with self._lock(box_id):
            state = self._expect(box_id, ("ready", "paused"), "paused")
            if state.state == "ready":
                runtime = self._can(state, "pause")
                await self.watchers.stop(box_id, last_look=True)
                await boundary(runtime.pause(box_id), "pausing a box")
                await self.journal.append(box_id, [entry(BoxPaused, "agent")])
        return await self.box(box_id)

    async def resume_box(self, box_id: str) -> BoxState:
        """A paused box comes back as it was; a stopped one with a new desktop."""
        async with self._lock(box_id):
            state = self._expect(box_id, ("ready", "paused", "stopped"), "resumed")
            runtime = self._runtime_named(state.runtime)
            if state.state == "paused":
                await boundary(runtime.resume(box_id), "resuming a box")
                await self.journal.append(box_id, [entry(BoxResumed, "agent")])
                self.watchers.start(box_id)
            elif state.state == "stopped":
                await self.journal.append(box_id, [entry(BoxStarted, "agent")])
                try:
                    started = await boundary(runtime.start(box_id), "starting a box")
                except HolmError as exc:
                    failed = entry(BoxFailed, "system", why=exc.message)
                    await self.journal.append(box_id, [failed])
                    raise
                await self._record_started(box_id, runtime, started)
        return await self.box(box_id)

    async def stop_box(self, box_id: str) -> BoxState:
        async with self._lock(box_id):
            state = self._expect(box_id, ("ready", "paused", "stopped"), "stopped")
            if state.state != "stopped":
                runtime = self._can(state, "stop")
                await self.watchers.stop(box_id, last_look=True)
                await boundary(runtime.stop(box_id), "stopping a box")
                await self.journal.append(box_id, [entry(BoxStopped, "agent")])
        return await self.box(box_id)

    async def install_apps(self, box_id: str, apps: list[str]) -> BoxState:
        """Catalog apps (or the spec's own) into a running box, by its runtime; recorded as
        `apps_installed` once they are there. A runtime that cannot, or a box it cannot
        give them to, is refused with nothing recorded."""
        async with self._lock(box_id):
            state = guards.ready(self.state_of(box_id), box_id)
            wanted = app_packages_by_name(apps, (state.spec or Spec()).apps)
            runtime = self._runtime_named(state.runtime)
            if not isinstance(runtime, AppInstaller):
                raise Unsupported(
                    f"the {runtime.name} runtime cannot install applications into a running"
                    " box; name them in the spec's apps instead"
                )
            await boundary(runtime.install_apps(box_id, wanted), "installing applications")
            await self.journal.append(box_id, [entry(AppsInstalled, "agent", apps=list(wanted))])
        return await self.box(box_id)

    async def remove(self, box_id: str, reason: str, *, lost: bool = False) -> bool:
        """The server removes a box (expired, idle, or `lost`: its runtime says it no longer
        has it): `gone`. An unreachable box past its deadline goes even though its runtime
        cannot be asked to delete it (a restart's reconciliation deletes it when the runtime
        still has it). False when it was removed already."""
        async with self._lock(box_id):
            state = self.journal.state(box_id)
            if state is None or state.removed:
                return False
            # A lost box has no screen left to look at.
            await self.watchers.stop(box_id, last_look=not lost)
            if not lost:
                runtime = self._runtime_named(state.runtime)
                try:
                    await boundary(runtime.delete(box_id), "removing a box")
                except NotFound:
                    pass
                except HolmError as exc:
                    if state.state != "unreachable":
                        raise
                    log.warning("box %s goes without its runtime's delete: %s", box_id, exc)
            await self.journal.append(box_id, [entry(BoxGone, "system", reason=reason)])
            return True

    async def mark_unreachable(self, runtime_name: str, reason: str) -> int:
        """Record `box_unreachable` for each box of a runtime that cannot be reached (but
        those starting, failed or unreachable already). Their traces stay readable; calls
        into them answer `unavailable` (retryable) until `reachable_again`."""
        marked = 0
        for state in self.boxes():
            if state.runtime != runtime_name or state.state in _NOT_MARKED:
                continue
            async with self._lock(state.id):
                now = self.journal.state(state.id)
                if now is None or now.removed or now.state in _NOT_MARKED:
                    continue
                await self.watchers.stop(state.id)
                unreachable = entry(BoxUnreachable, "system", reason=reason)
                await self.journal.append(state.id, [unreachable])
                marked += 1
        return marked

    async def reachable_again(self, box_id: str, runtime_state: str) -> bool:
        """An unreachable box its runtime lists again: it is what the runtime says (ready,
        paused or stopped), by the `system` actor. False when it was not unreachable."""
        async with self._lock(box_id):
            state = self.journal.state(box_id)
            if state is None or state.removed or state.state != "unreachable":
                return False
            back: Entry
            if runtime_state == "paused":
                back = entry(BoxPaused, "system")
            elif runtime_state == "stopped":
                back = entry(BoxStopped, "system")
            else:
                back = entry(
                    BoxReady,
                    "system",
                    viewer_urls=list(state.viewer_urls),
                    devtools_url=state.devtools_url,
                )
            await self.journal.append(box_id, [back])
            if isinstance(back, BoxReady):
                self.watchers.start(box_id)
            return True

    # In the box

    async def run_batch(
        self, box_id: str, screen: int, request: ActionsRequest, *, actor: Actor = "agent"
    ) -> ActionsResult:
        """Do a batch on one screen: one `acted` entry per step that ran (with the batch's
        id and the step's index), plus `app_launched` for a `launch`. A second batch on the
        same screen waits for this one. Key names are checked and normalized first: an
        unknown one refuses the whole batch, and nothing is recorded."""
        request = msgspec.structs.replace(
            request, actions=[normalized_action(action) for action in request.actions]
        )
        state = guards.ready(self.state_of(box_id), box_id)
        guards.screen_of(state, screen, drive=True)
        guards.features_for(state, request.actions)
        names = names_in(request.actions)
        values = await values_for(self, state.owner, names, request.secrets) if names else {}
        async with self._screen_lock(box_id, screen):
            # Checked again: the box may have been paused while this batch waited.
            state = guards.ready(self.state_of(box_id), box_id)
            guards.screen_of(state, screen, drive=True)
            desktop = await self._desktop(box_id)
            try:
                return await run_steps(
                    self.journal,
                    desktop,
                    box_id,
                    screen,
                    request,
                    actor,
                    values,
                    frames=self.step_frames,
                )
            finally:
                self.watchers.nudge(box_id, screen)

    async def act(
        self,
        box_id: str,
        screen: int,
        action: Action,
        *,
        actor: Actor = "agent",
        secrets: Mapping[str, str] | None = None,
    ) -> ActionResult:
        """Do one action outside a batch (a REST route's operation) and record it as the
        spec's recording table says (`recorded_alone`): `executed`, `file_read`,
        `file_written`, `clipboard_read`/`clipboard_set`, `app_launched`, or nothing for a
        read. An action that drives a screen holds it, as a batch does."""
        action = normalized_action(action)
        state = guards.ready(self.state_of(box_id), box_id)
        guards.features_for(state, [action])
        names = names_in([action])
        values = await values_for(self, state.owner, names, secrets or {}) if names else {}
        sent = with_values(action, values) if values else action
        try:
            result = await self._act_on(box_id, screen, state, sent)
        except HolmError as exc:
            raise scrubbed_error(exc, values.values()) from None
        result = scrubbed_result(result, values.values())
        # Recorded as it was asked: the secrets by name.
        entries = recorded_alone(action, result, screen, actor)
        if entries:
            await self.journal.append(box_id, entries)
        return result

    async def secrets_box(self) -> SecretsBox:
        """The server's sealing key (`HOLM_SECRETS_KEY`, or its key file), made once."""
        if self._secrets_box is None:
            self._secrets_box = await asyncio.to_thread(
                SecretsBox.of_setting, self.config.secrets_key, self.config.state_dir
            )
        return self._secrets_box

    async def vnc_password(self, box_id: str) -> str:
        """The VNC password of a box with `auth: "password"`: its workspace's secret that
        `password_secret` names, read each time (so a changed secret is the password from
        then on), or else one made for the box from the server's secrets key and its ID
        (holm/vnc_auth.py), the same after a restart and never stored."""
        state = await self.box(box_id)
        policy = (state.spec or Spec()).policy
        if policy.password_secret is not None:
            return await self._secret_password(state.owner, policy.password_secret)
        return await self.made_vnc_password(box_id)

    async def made_vnc_password(self, box_id: str) -> str:
        box = await self.secrets_box()
        return password_of(box.derived(f"vnc-password:{box_id}".encode()))

    async def _secret_password(self, workspace: str | None, name: str) -> str:
        values = await self.secrets.values(workspace or "", [name])
        if name not in values:
            raise BadRequest(missing_message([name]))
        why = fits(values[name])
        if why is not None:
            raise BadRequest(f"the secret {name} is no VNC password: {why}")
        return values[name]

    async def shred_trace(self, box_id: str) -> bool:
        """Destroy the box's trace's data key (the box may be removed: its trace stays)."""
        return await self.person_texts.shred(box_id)

    async def person_text(self, trace: str, sealed: str) -> str | None:
        return await self.person_texts.open(trace, sealed)

    async def check_secrets(
        self, workspace: str | None, names: set[str], given: Mapping[str, str]
    ) -> None:
        if names:
            await values_for(self, workspace, names, given)

    async def _act_on(
        self, box_id: str, screen: int, state: BoxState, action: Action
    ) -> ActionResult:
        on_screen = uses_screen(action)
        reading = reads_only(action)
        if on_screen:
            guards.screen_of(state, screen, drive=not reading)
        desktop = await self._desktop(box_id)
        what = f"a {type_of(action)}"
        # The desktop may send the action as it is asked (holm/adapters/base.py): it is
        # asked under the screen's lock, when it takes one.
        if reading:
            result = await boundary(desktop.act(screen, action), what)
        elif on_screen:
            async with self._screen_lock(box_id, screen):
                result = await boundary(desktop.act(screen, action), what)
            self.watchers.nudge(box_id, screen)
        else:
            result = await boundary(desktop.act(screen, action), what)
            # A command can open windows on any screen.
            self.watchers.nudge(box_id)
        return result

    async def frame(
        self,
        box_id: str,
        screen: int,
        *,
        have: str | None = None,
        window: str | None = None,
        region: Region | None = None,
        scale: int = 100,
        encoding: Encoding = PNG,
    ) -> FrameResult:
        """A capture of a screen, a window or a rectangle, encoded in the box (a JPEG or WebP
        costs no PNG first); not recorded. A whole screen known to be still is answered
        `unchanged` without asking the box (still_screens.py)."""
        desktop = await self._reading(box_id, screen)
        still = self.watchers.still
        whole = window is None and region is None and scale == 100
        if whole and have is not None:
            known = still.unchanged(box_id, screen, desktop, have)
            if known is not None:
                return known
        generation = still.generation(box_id)
        frame = await boundary(
            desktop.frame(
                screen, have=have, window=window, region=region, scale=scale, encoding=encoding
            ),
            "a frame capture",
        )
        if whole:
            still.saw(box_id, screen, desktop, frame, generation)
        return frame

    async def record_frame(self, box_id: str, screen: int, *, always: bool = False) -> bool:
        """Append a `frame` entry of the screen as it is now (what the watcher does when
        the screen changed; with `always`, even when it did not, as a fork's last step);
        say whether one was appended."""
        await self._reading(box_id, screen)
        state = await self.box(box_id)
        return await self.watchers.record(state, screen, always=always)

    # Viewers

    def check_viewer(self, box_id: str, screen: int) -> None:
        """Refuse a viewer of a screen that is not there to be watched: the box must be
        ready, have the screen, and its runtime viewers (a ticket is made only then)."""
        state = guards.ready(self.state_of(box_id), box_id)
        guards.screen_of(state, screen, drive=False)
        runtime = self._runtime_named(state.runtime)
        if not runtime.can().viewer:
            raise Unsupported(f"the {runtime.name} runtime has no viewer of its screens")

    async def open_stream(
        self, box_id: str, kind: StreamKind, screen: int = 0, *, limit: int = STREAM_LIMIT
    ) -> Stream:
        """A byte stream to the box's agent, a screen's VNC server or a screen's DevTools,
        for the relays (which check their ticket or token before they ask): the box must
        be ready and have the screen; what its runtime cannot give is `unsupported`. The
        caller closes it. Nothing through it is recorded."""
        state = guards.ready(self.state_of(box_id), box_id)
        guards.screen_of(state, screen, drive=False)
        runtime = self._runtime_named(state.runtime)
        can = runtime.can()
        if kind == "vnc" and not can.viewer:
            raise Unsupported(f"the {runtime.name} runtime has no viewer of its screens")
        if kind == "devtools" and not can.pages:
            raise Unsupported("this box's runtime gives no DevTools to relay")
        return await boundary(
            runtime.open_stream(box_id, kind, screen, limit=limit), f"opening the box's {kind}"
        )

    def taken_over(self, box_id: str, screen: int) -> bool:
        """Whether a person has the screen (the box's state says so)."""
        state = guards.known(self.journal.state(box_id), box_id)
        return screen < len(state.held_by) and state.held_by[screen] == "person"

    async def take_over(self, box_id: str, screen: int, *, shared: bool = False) -> bool:
        """Give the screen to a person: wait for a batch on it to end, release every key
        and button the agent has down (one held with a `hold_ms` too), and record
        `takeover_started` (actor `agent`: a client of the API hands the screen over, as the
        spec's trace example reads). From then on the agent's input on it is refused
        (`guards.screen_of`). False, and nothing recorded, when a person has it already."""
        state = guards.ready(self.state_of(box_id), box_id)
        guards.screen_of(state, screen, drive=False)
        async with self._screen_lock(box_id, screen):
            guards.ready(self.state_of(box_id), box_id)
            if self.taken_over(box_id, screen):
                return False
            desktop = await self._desktop(box_id)
            await _release_everything(desktop, screen)
            started = entry(TakeoverStarted, "agent", screen=screen, shared=shared)
            await self.journal.append(box_id, [started])
        self.watchers.nudge(box_id, screen)
        return True

    async def give_back(self, box_id: str, screen: int) -> bool:
        """The agent takes the screen back: `takeover_ended`. False, and nothing recorded,
        when no person had it (a starting or failed box refuses it, as every call)."""
        state = guards.usable(self.state_of(box_id), box_id)
        guards.screen_of(state, screen, drive=False)
        async with self._screen_lock(box_id, screen):
            if not self.taken_over(box_id, screen):
                return False
            await self.journal.append(box_id, [entry(TakeoverEnded, "agent", screen=screen)])
        return True

    async def record_person(self, box_id: str, screen: int, action: Action) -> None:
        """Record what a person did through a control viewer as the action an agent would
        have sent (`acted`, actor `person`): it already happened in the box (over VNC), so
        nothing is done here. A fork skips these unless asked to replay them."""
        state = self.journal.state(box_id)
        if state is None or state.removed:
            return
        # Key names as an agent's are recorded (holm/wire/keys.py), so a fork's step matches.
        action = normalized_action(action)
        size: int | None = None
        sealed: str | None = None
        if isinstance(action, Type) and action.text:
            # The text is left out of the entry: sealed under the trace's own key (so it
            # can be shredded), or not kept at all.
            size = len(action.text.encode())
            if self.config.record_person_text == "encrypted":
                sealed = await self.person_texts.seal(box_id, action.text)
            action = msgspec.structs.replace(action, text="")
        acted = entry(
            Acted,
            "person",
            screen=screen,
            action=action,
            ok=True,
            key=acted_key(screen, action),
            bytes=size,
            sealed=sealed,
        )
        await self.journal.append(box_id, [acted])

    # Scheduled work

    async def reap(self) -> int:
        """Remove the boxes past their deadline or idle too long, and forget the ones their
        runtime no longer has. Returns how many were removed."""
        return await reap(self, now_ms())

    async def prune(self) -> PruneReport:
        """Drop old frames, old entries (but for those box states are folded from), traces
        left with nothing new, and old events."""
        now = now_ms()
        report = await stored(self.store.prune(now, self.journal.keep))
        for state in self.journal.states():
            if await stored(self.store.info(state.id)) is None:
                self.journal.forget(state.id)
        if self.ownership is not None:
            kept = {info.trace for info in await stored(self.store.traces())}
            self.ownership.elsewhere.keep_only(kept)
        self.feed.prune(now)
        return report

    async def run_jobs(self) -> int:
        return await self.jobs.run()

    # Helpers

    def _runtime_named(self, name: str) -> Runtime:
        runtime = self.runtimes.get(name)
        if runtime is None:
            have = ", ".join(sorted(self.runtimes)) or "none"
            raise NotFound(f"no runtime named {name!r} (this server has: {have})")
        return runtime

    def _expect(self, box_id: str, allowed: tuple[str, ...], verb: str) -> BoxState:
        state = guards.usable(self.state_of(box_id), box_id)
        if state.state == "unreachable":
            guards.ready(state, box_id)
        if state.state not in allowed:
            raise ScreenUnavailable(
                f"box {box_id} is {state.state} ({state.reason}); it cannot be {verb}",
                retryable=False,
            )
        return state

    def _can(self, state: BoxState, what: Literal["pause", "stop"]) -> Runtime:
        runtime = self._runtime_named(state.runtime)
        if not getattr(runtime.can(), what):
            raise Unsupported(f"the {runtime.name} runtime cannot {what} a box")
        return runtime

    async def _desktop(self, box_id: str) -> Desktop:
        runtime = self.runtime_of(box_id)
        return await boundary(runtime.desktop(box_id), "reaching the box's desktop")

    async def _reading(self, box_id: str, screen: int) -> Desktop:
        state = guards.ready(self.state_of(box_id), box_id)
        guards.screen_of(state, screen, drive=False)
        return await self._desktop(box_id)

    async def _driving(self, box_id: str, screen: int) -> Desktop:
        state = guards.ready(self.state_of(box_id), box_id)
        guards.screen_of(state, screen, drive=True)
        return await self._desktop(box_id)

    def _lock(self, box_id: str) -> asyncio.Lock:
        return self._box_locks.setdefault(box_id, asyncio.Lock())

    def _screen_lock(self, box_id: str, screen: int) -> asyncio.Lock:
        return self._screen_locks.setdefault((box_id, screen), asyncio.Lock())


def _check_can(runtime: Runtime, spec: Spec, placement: Placement) -> None:
    """Refuse before anything is recorded what the runtime says it cannot do."""
    can = runtime.can()
    desktop = spec.desktop
    refusals = [
        (desktop.screens > can.max_screens, f"more than {can.max_screens} screens"),
        (desktop.server == "wayland" and not can.wayland, "a wayland desktop"),
        (bool(desktop.packages) and not can.packages, "packages"),
        (not spec.policy.network and not can.network_off, "a box without network"),
        (placement.persistent and not can.persistent, "a persistent box"),
        (placement.memory is not None and not can.memory_limit, "a memory limit"),
        (placement.cpus is not None and not can.cpu_limit, "a cpu limit"),
        (
            placement.profile is not None and not can.profile,
            "a browser profile (container runtimes only)",
        ),
    ]
    for refused, what in refusals:
        if refused:
            raise Unsupported(f"the {runtime.name} runtime cannot give {what}")
    if desktop.server == "wayland":
        features = canonical_spec(spec).desktop.features or []
        missing = sorted(f for f in features if f in can.wayland_without)
        if missing:
            raise Unsupported(
                f"the {runtime.name} runtime's wayland desktops have no {', '.join(missing)}"
                " (list the spec's features without them)"
            )


async def _release_everything(desktop: Desktop, screen: int) -> None:
    """Release what the agent has down on the screen: what a batch left without a
    `hold_ms` (`end_batch`), then what it holds with one, which `end_batch` leaves down
    until its time: the spec releases both when a person takes control."""
    ended = await boundary(desktop.end_batch(screen), "releasing what the agent holds")
    for button in ended.held.buttons:
        up = MouseUp(button=msgspec.convert(button, Button))
        await boundary(desktop.act(screen, up), "releasing a button the agent holds")
    for key in ended.held.keys:
        await boundary(desktop.act(screen, KeyUp(key=key)), "releasing a key the agent holds")
