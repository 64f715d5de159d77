"""The replay interpreter: it does a plan's steps on a new box through the server's command
side (`holm.replay.boxes.Boxes`, which the engine is), at about the source's pace, and
judges each step with a policy (a fork's, or a strict replay's).

The steps of one source batch are done again as one batch (`batches_of`): a button or key a
step pressed stays down for the steps after it and is released when the batch ends, as in
the source. Every other step is done alone.

Pacing: before each batch or lone step it sleeps the source's gap between its first step and
the one before (for the first step, the gap from the source desktop being ready) minus the
time the replay already spent since the previous one began, each wait at most
`fork_wait_cap_ms` (2 s). The replay stops at the first step its policy rejects
(`stopped_at` = that step's source seq; a refused step ends its batch there, as it did in
the source, and after a step that ran with another outcome the rest of its batch has run
too and counts in `attempted`), or when `fork_limit_secs` (3 min) have passed since its
first step could begin (`truncated`; a batch still running then is abandoned, its steps
counted in `attempted`). Whatever happens, it records the final screen of every screen as
a `frame` entry, and the new box stays.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import msgspec

from holm.errors import BadRequest, Denied, HolmError, Unsupported
from holm.projections.box_state import BoxState
from holm.projections.views import box_view
from holm.replay.boxes import Boxes
from holm.replay.plan import DoAction, DoExec, DoLaunch, Plan, Step, plan_fork
from holm.replay.reading import read_whole_trace
from holm.replay.screen_check import Reference, meet_frame
from holm.replay.strict import Divergence, ForkPolicy, ReplayPolicy
from holm.wire.actions import Action, Exec, ExecWhat, Launch, Type, names_in
from holm.wire.api import (
    ActionsRequest,
    BoxView,
    ForkBranch,
    ForkRequest,
    ForkResult,
    Outcome,
    ReplayReport,
    Skipped,
)
from holm.wire.results import ExecResult, expect
from holm.wire.spec import Placement, Spec


class ReplayTiming(msgspec.Struct, kw_only=True):
    """Where a replay's time went, in seconds: for the overhead figure of bench/fork.py."""

    wall: float = 0.0
    in_steps: float = 0.0
    # Recording the final frames.
    finishing: float = 0.0
    # The pause before each step, as chosen: the source's gap less the time already spent,
    # at most the cap.
    waits: list[float] = msgspec.field(default_factory=list)

    @property
    def waited(self) -> float:
        return sum(self.waits)


class ReplayRun(msgspec.Struct, kw_only=True):
    box: BoxState
    report: ReplayReport
    divergence: Divergence | None = None
    timing: ReplayTiming = msgspec.field(default_factory=ReplayTiming)


async def fork_box(
    boxes: Boxes, source_box_id: str, request: ForkRequest | Mapping[str, Any]
) -> ForkResult:
    """A new box made from the trace of `source_box_id` (a removed box too: its trace
    stays), doing the source's steps again up to `request.up_to`; `request.count` of them,
    replaying at once, each an ordinary box (its trace starts `box_created`,
    `forked_from`). With queued jobs, the new boxes answer at once, `starting`, with an
    empty report: each one's start and replay run as one job, and a fork that stops before
    its box started leaves it `failed`."""
    request = _fork_request(request)
    new_ids, plan, secrets = await _record_forks(boxes, source_box_id, request)

    def launch_and_replay(new_id: str) -> Callable[[], Awaitable[None]]:
        async def job() -> None:
            try:
                await boxes.start_recorded(new_id)
                await replay_plan(boxes, new_id, plan, ForkPolicy(), secrets=secrets)
            finally:
                await boxes.fail_starting(new_id, "the fork stopped before its box was started")

        return job

    name = f"fork {source_box_id} into"
    if all([boxes.queue(f"{name} {new_id}", launch_and_replay(new_id)) for new_id in new_ids]):
        made = [(box_view(await boxes.box(new_id)), ReplayReport()) for new_id in new_ids]
        return _fork_result(made)
    if len(new_ids) == 1:
        # One box: a start that fails is the fork's error, as the spec's fork answers it.
        await boxes.start_recorded(new_ids[0])
        run = await replay_plan(boxes, new_ids[0], plan, ForkPolicy(), secrets=secrets)
        return ForkResult(box=box_view(run.box), replay=run.report)
    runs = await asyncio.gather(*(_branch(boxes, new_id, plan, secrets) for new_id in new_ids))
    return _fork_result([(box_view(run.box), run.report) for run in runs])


async def _branch(boxes: Boxes, new_id: str, plan: Plan, secrets: Mapping[str, str]) -> ReplayRun:
    """One box of a fork of many, started and replayed: a branch that cannot start is a
    `failed` box among the others (its `box_failed` says why), not the whole fork's error."""
    try:
        await boxes.start_recorded(new_id)
    except HolmError:
        return ReplayRun(box=await boxes.box(new_id), report=ReplayReport())
    return await replay_plan(boxes, new_id, plan, ForkPolicy(), secrets=secrets)


def _fork_result(made: list[tuple[BoxView, ReplayReport]]) -> ForkResult:
    """The spec's answer for the first box, and every box in `branches` when there are
    more."""
    (box, report), *others = made
    branches = [ForkBranch(box=b, replay=r) for b, r in made] if others else None
    return ForkResult(box=box, replay=report, branches=branches)


async def fork_run(boxes: Boxes, source_box_id: str, request: ForkRequest) -> ReplayRun:
    """`fork_box` done now, with what the report leaves out: the timing, and why it
    stopped."""
    new_id, plan, secrets = await _record_fork(boxes, source_box_id, request)
    await boxes.start_recorded(new_id)
    return await replay_plan(boxes, new_id, plan, ForkPolicy(), secrets=secrets)


async def _record_fork(
    boxes: Boxes, source: str, request: ForkRequest
) -> tuple[str, Plan, dict[str, str]]:
    (new_id,), plan, secrets = await _record_forks(boxes, source, request, count=1)
    return new_id, plan, secrets


async def _record_forks(
    boxes: Boxes, source: str, request: ForkRequest, count: int | None = None
) -> tuple[list[str], Plan, dict[str, str]]:
    """Plan the fork once and record its `count` new boxes (the request's by default), with
    the values of the secrets its steps name."""
    if request.mode == "snapshot":
        raise Unsupported("a snapshot fork is refused: a fork replays the trace")
    state = await boxes.box(source)
    # A source still starting has no desktop yet to have done anything in, and a failed one
    # never had one: both refuse a fork as they refuse every other call (a removed box's
    # trace stays, and forks).
    if not state.removed and state.state in ("starting", "failed"):
        why = f" ({state.reason})" if state.reason else ""
        raise Denied(
            f"box {source} is {state.state}{why}; a fork needs a box that started",
            retryable=state.state == "starting",
        )
    plan = plan_fork(
        await read_whole_trace(boxes, source),
        up_to=request.up_to,
        include_person=request.include_person,
    )
    spec, placement, owner = await _origin_of(boxes, source, plan, request.placement)
    plan, person = await _person_text_opened(boxes, source, plan)
    secrets = {**request.secrets, **person}
    # A step that types a secret needs its value: refused now, naming it, rather than a
    # fork that types nothing (or stops half way) and says it replayed.
    await boxes.check_secrets(owner, secret_names(plan), secrets)
    new_ids = [
        await boxes.record_box(spec, placement, owner=owner, forked_from=(source, request.up_to))
        for _ in range(request.count if count is None else count)
    ]
    return new_ids, plan, secrets


async def _person_text_opened(boxes: Boxes, source: str, plan: Plan) -> tuple[Plan, dict[str, str]]:
    """A person's sealed `type` steps (with `include_person`) made steps that type a secret
    of this fork only, `person_text_<seq>`, whose value is the text opened with the source
    trace's key: the fork's trace keeps the name, not the text. With the key shredded, such
    a step is skipped, saying so, and the rest of the plan stays."""
    steps: list[Step] = []
    skipped = list(plan.skipped)
    values: dict[str, str] = {}
    for step in plan.steps:
        match step.do:
            case DoAction(action=Type() as typed, sealed=str() as sealed):
                text = await boxes.person_text(source, sealed)
                if text is None:
                    why = "the trace's data key was shredded: what a person typed is gone"
                    skipped.append(Skipped(seq=step.seq, kind=step.kind, why=why))
                    continue
                name = f"person_text_{step.seq}"
                values[name] = text
                action = msgspec.structs.replace(typed, text="", secret=name)
                do = msgspec.structs.replace(step.do, action=action, sealed=None)
                steps.append(msgspec.structs.replace(step, do=do))
            case _:
                steps.append(step)
    if not values and len(skipped) == len(plan.skipped):
        return plan, {}
    skipped.sort(key=lambda s: s.seq)
    return msgspec.structs.replace(plan, steps=steps, skipped=skipped), values


async def replay_plan(
    boxes: Boxes,
    box_id: str,
    plan: Plan,
    policy: ReplayPolicy,
    reference: Reference | None = None,
    *,
    secrets: Mapping[str, str] | None = None,
) -> ReplayRun:
    """Do the plan's steps on the ready box `box_id` and record its final screens.
    `reference` gives the source's PNG of a frame hash, for a policy with a frame
    tolerance; `secrets` the values of the secrets its steps name (over the workspace's)."""
    given = dict(secrets or {})
    config = boxes.config
    cap = config.fork_wait_cap_ms / 1000
    began = time.monotonic()
    deadline = began + config.fork_limit_secs
    timing = ReplayTiming()
    report = ReplayReport(skipped=list(plan.skipped))
    divergence: Divergence | None = None
    previous_at_ms = plan.origin.ready_at_ms if plan.origin is not None else None
    previous_began = began
    for run in batches_of(plan.steps):
        first = run[0]
        gap = 0.0 if previous_at_ms is None else (first.at_ms - previous_at_ms) / 1000
        wait = min(cap, max(0.0, gap - (time.monotonic() - previous_began)))
        remaining = deadline - time.monotonic()
        if wait >= remaining:
            await asyncio.sleep(max(0.0, remaining))
            timing.waits.append(max(0.0, remaining))
            report.truncated = True
            break
        await asyncio.sleep(wait)
        timing.waits.append(wait)
        previous_at_ms, previous_began = first.at_ms, time.monotonic()
        attempted_before = report.attempted
        try:
            async with asyncio.timeout(deadline - previous_began):
                outcomes = await do_steps(boxes, box_id, run, given)
                # Every step that ran counts, the ones of its batch after a failed one too.
                report.attempted += len(outcomes)
                for step, outcome in zip(run, outcomes, strict=False):
                    divergence = policy.judge(step, outcome)
                    expected = policy.frame_to_meet(step) if divergence is None else None
                    if expected is not None:
                        divergence = await meet_frame(
                            boxes, box_id, step.seq, expected, policy, reference
                        )
                    if divergence is not None:
                        report.stopped_at = step.seq
                        break
                    report.ok += 1
        except TimeoutError:
            # Abandoned at the limit: what was sent counts as attempted, not as ok.
            report.attempted = attempted_before + len(run)
            report.truncated = True
            break
        finally:
            timing.in_steps += time.monotonic() - previous_began
        if divergence is not None:
            break
    finishing = time.monotonic()
    await record_final_frames(boxes, box_id)
    timing.finishing = time.monotonic() - finishing
    timing.wall = time.monotonic() - began
    return ReplayRun(
        box=await boxes.box(box_id), report=report, divergence=divergence, timing=timing
    )


def batches_of(steps: list[Step]) -> Iterator[list[Step]]:
    """The plan's steps as the replay does them: the steps of one source batch together, as
    one batch on their screen, so that a button or key a step pressed stays down for the
    next step and is released when the batch ends, as in the source; every other step
    alone."""
    run: list[Step] = []
    for step in steps:
        if run and _same_batch(run[-1], step):
            run.append(step)
            continue
        if run:
            yield run
        run = [step]
    if run:
        yield run


def _same_batch(before: Step, step: Step) -> bool:
    match before.do, step.do:
        case DoAction(screen=screen), DoAction(screen=same):
            return before.batch is not None and before.batch == step.batch and screen == same
        case _:
            return False


def secret_names(plan: Plan) -> set[str]:
    """Every secret the plan's steps name."""
    actions: list[Action] = []
    for step in plan.steps:
        match step.do:
            case DoAction(action=action):
                actions.append(action)
            case DoExec(argv=argv, timeout_ms=timeout_ms, env=env):
                actions.append(Exec(what=ExecWhat(argv=argv, timeout_ms=timeout_ms, env=env)))
    return names_in(actions)


async def do_steps(
    boxes: Boxes, box_id: str, run: list[Step], secrets: Mapping[str, str] | None = None
) -> list[Outcome]:
    """Do a run of `batches_of` (the steps of one source batch, or one step) as the agent
    and tell how each step went, as far as they went: a batch stops at a refused step."""
    match run:
        case [Step(do=DoAction(screen=screen)), *_]:
            actions = [step.do.action for step in run if isinstance(step.do, DoAction)]
            return await _batch(boxes, box_id, screen, actions, secrets)
        case _:
            return [await do_step(boxes, box_id, step, secrets) for step in run]


async def do_step(
    boxes: Boxes, box_id: str, step: Step, secrets: Mapping[str, str] | None = None
) -> Outcome:
    """Do one step as the agent and tell how it went; a refusal is an outcome, not an
    error."""
    try:
        match step.do:
            case DoAction(screen=screen, action=action):
                (outcome,) = await _batch(boxes, box_id, screen, [action], secrets)
                return outcome
            case DoExec(argv=argv, timeout_ms=timeout_ms, env=env):
                run = Exec(what=ExecWhat(argv=argv, timeout_ms=timeout_ms, env=env))
                done = await boxes.act(box_id, 0, run, secrets=secrets)
                return Outcome(ok=True, exec=expect(done, ExecResult))
            case DoLaunch(screen=screen, app=app, args=args):
                await boxes.act(box_id, screen, Launch(app=app, args=args))
                return Outcome(ok=True)
    except HolmError as exc:
        return Outcome(ok=False, error=exc.body())


async def _batch(
    boxes: Boxes,
    box_id: str,
    screen: int,
    actions: list[Action],
    secrets: Mapping[str, str] | None = None,
) -> list[Outcome]:
    """The outcome of each step that ran (a batch stops at a refused step); a batch refused
    whole is the refusal of its first step."""
    request = ActionsRequest(actions=actions, secrets=dict(secrets or {}))
    try:
        answer = await boxes.run_batch(box_id, screen, request)
    except HolmError as exc:
        return [Outcome(ok=False, error=exc.body())]
    return [Outcome.of(result) for result in answer.results]


async def record_final_frames(boxes: Boxes, box_id: str) -> None:
    """End the new trace with a `frame` entry of every screen as it is now, so that the
    last frames of a source and its fork can be compared."""
    with contextlib.suppress(HolmError):
        state = await boxes.box(box_id)
        if state.state != "ready":
            return
        for screen in range(state.screens):
            await boxes.record_frame(box_id, screen, always=True)


async def _origin_of(
    boxes: Boxes, source: str, plan: Plan, given: Placement | None
) -> tuple[Spec, Placement, str | None]:
    """The spec of the source and the placement of the fork: the given one replaces the
    source's completely, and names the source's runtime when it names none. Without one,
    the source's placement but its browser profile: a fork starts with a fresh profile
    (the source's sign-ins are not the trace's to replay) unless its placement names one."""
    state = await boxes.box(source)
    if plan.origin is not None:
        spec, placement, runtime = plan.origin.spec, plan.origin.placement, plan.origin.runtime
    elif state.spec is not None:
        # The store dropped the front of the trace; the box state still has its spec.
        spec, placement, runtime = state.spec, state.placement or Placement(), state.runtime
    else:
        raise Unsupported(f"the trace of {source} has no spec to make a fork from")
    fresh = msgspec.structs.replace(placement, profile=None)
    placement = given if given is not None else fresh
    if placement.runtime is None:
        placement = msgspec.structs.replace(placement, runtime=runtime)
    return spec, placement, state.owner


def _fork_request(request: ForkRequest | Mapping[str, Any]) -> ForkRequest:
    if isinstance(request, ForkRequest):
        return request
    try:
        return msgspec.convert(dict(request), ForkRequest)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"bad fork request: {exc}") from exc


__all__ = [
    "ReplayRun",
    "ReplayTiming",
    "batches_of",
    "do_step",
    "do_steps",
    "fork_box",
    "fork_run",
    "read_whole_trace",
    "record_final_frames",
    "replay_plan",
]
