"""Loose replay: each step of a run matched by its key anywhere in a recorded trace, the first
unused recorded step of that key first (FIFO per key), as the loose mode of the reference
runtime (spec/reference-traces-and-replay.md). It is for a run that was edited: its steps
need not come in the recorded order, and a step the recording never had is reported missed.

A matched step is served one of two ways (docs/fork.md):
- a step that can change the desktop (input, navigation, launches, commands, writes) gets
  the recorded outcome, as a mock (`mocked: true`): doing it again would change a desktop
  for nothing, and its whole outcome is in the trace;
- a step that only reads the desktop (`side_effect_free`: screenshots, windows, the pointer,
  files read or listed, page reads, waits on the screen) runs for real on a box, since what
  it read is not in the trace; with no box it is reported as needing one.

`plan_loose` is pure (entries in, matches out); `replay_loose` serves the plan, running what
must run through a given `RunStep`, so that a box can be the engine's or a server's.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Sequence

import msgspec

from holm.replay.plan import (
    READS,
    acted_exec_result,
    executed_result,
    launch_key,
    why_skipped,
)
from holm.wire import actions as act
from holm.wire.actions import Action, Exec, ExecWhat, Launch, type_of
from holm.wire.api import LooseReport, LooseStep, Outcome, Skipped
from holm.wire.diff import StepRef
from holm.wire.entries import (
    Acted,
    AppLaunched,
    ClipboardSet,
    Entry,
    Executed,
    FileWritten,
    acted_key,
    kind_of,
    redacted_action,
)

# Actions that only read the desktop, waits on its screen included: what they answer is not
# in the trace, so they run.
LOOSE_READS = (*READS, act.AwaitWindow, act.Console, act.WaitStill)


def side_effect_free(action: Action) -> bool:
    """Whether the action only reads the desktop. A plain `wait` is not a read: it has
    nothing to answer but that it waited, which the trace has."""
    match action:
        case act.Clipboard(text=None):
            return True
        case act.OnPage(what=act.WaitForOp() | act.OptionsOp()):
            return True
        case act.OnNode(what=act.NodeTreeOp() | act.NodeFindOp()):
            return True
        case act.Record(what=act.RecordWhat(do="status")):
            return True
        case _:
            return isinstance(action, LOOSE_READS)


class LooseCall(StepRef, kw_only=True):
    """A step of a run as loose replay matches it: where it is (its seq in a trace, or its
    index in a step list), its key, and what it does (a command run alone is an `exec`, a
    launch outside a batch a `launch`, each on its screen)."""

    screen: int
    action: Action


class RecordedCall(LooseCall, kw_only=True):
    """A step of a trace, with the outcome the trace recorded."""

    outcome: Outcome


class LooseRun(msgspec.Struct, kw_only=True):
    """The steps of a run to replay, and what it did that has no key to match it by."""

    steps: Sequence[LooseCall]
    skipped: list[Skipped] = msgspec.field(default_factory=list)


class Served(msgspec.Struct, kw_only=True):
    step: LooseCall
    recorded: RecordedCall
    mocked: bool


class LoosePlan(msgspec.Struct, kw_only=True):
    steps: int
    served: list[Served]
    missed: list[LooseCall]
    skipped: list[Skipped]


def steps_of_trace(entries: Sequence[Entry]) -> list[RecordedCall]:
    """The agent's steps of a trace with their recorded outcomes: every `acted` entry (a
    refused one too: its refusal is its outcome), every `executed` entry, and every
    `app_launched` outside a batch (one of a batch is the window of its `acted` launch)."""
    steps: list[RecordedCall] = []
    launches: dict[str, RecordedCall] = {}
    for entry in entries:
        if entry.actor == "person":
            continue
        match entry:
            case Acted():
                outcome = Outcome(ok=entry.ok, error=entry.error, exec=acted_exec_result(entry))
                step = _call(entry, entry.key, entry.screen, entry.action, outcome)
                if isinstance(entry.action, Launch) and entry.batch is not None:
                    launches[entry.batch] = step
                steps.append(step)
            case Executed():
                run = Exec(
                    what=ExecWhat(
                        argv=list(entry.argv), timeout_ms=entry.timeout_ms, env=dict(entry.env)
                    )
                )
                steps.append(
                    _call(entry, entry.key, 0, run, Outcome(ok=True, exec=executed_result(entry)))
                )
            case AppLaunched(batch=None):
                launch = Launch(app=entry.app, args=list(entry.args))
                outcome = Outcome(ok=True, window=entry.window)
                steps.append(_call(entry, launch_key(entry), entry.screen, launch, outcome))
            case AppLaunched(batch=str() as batch) if batch in launches:
                launches.pop(batch).outcome.window = entry.window
            case _:
                pass
    return steps


def run_of_trace(entries: Sequence[Entry]) -> LooseRun:
    """A run to replay, from its trace: its steps, and its file and clipboard writes done
    alone (`PUT …/files`, `PUT …/clipboard`), which have no key."""
    skipped = [
        Skipped(seq=entry.seq, kind=kind_of(entry), why=f"no key to match: {why}")
        for entry in entries
        if isinstance(entry, FileWritten | ClipboardSet)
        and entry.actor != "person"
        and (why := why_skipped(entry)) is not None
    ]
    return LooseRun(steps=steps_of_trace(entries), skipped=skipped)


def run_of_list(actions: Sequence[Action], screen: int = 0) -> LooseRun:
    """A run to replay, from a step list (what `holm batch` takes) on `screen`: each step
    keyed as its `acted` entry would be, bytes of a write left out."""
    return LooseRun(
        steps=[
            LooseCall(
                seq=index,
                kind="acted",
                key=acted_key(screen, redacted_action(action)[0]),
                screen=screen,
                action=action,
            )
            for index, action in enumerate(actions)
        ]
    )


def match_by_key(
    recorded: Sequence[RecordedCall], run: Sequence[LooseCall]
) -> list[RecordedCall | None]:
    """For each step of `run`, in order, the first recorded step with its key that no step
    before it took, or None."""
    unused: defaultdict[str, deque[RecordedCall]] = defaultdict(deque)
    for step in recorded:
        unused[step.key].append(step)
    return [unused[step.key].popleft() if unused[step.key] else None for step in run]


def plan_loose(recorded: Sequence[Entry], run: LooseRun) -> LoosePlan:
    """Match the run's steps in the recorded trace, and decide for each match whether the
    recorded outcome is served (a step that can change the desktop) or the step runs."""
    served: list[Served] = []
    missed: list[LooseCall] = []
    matches = match_by_key(steps_of_trace(recorded), run.steps)
    for step, match in zip(run.steps, matches, strict=True):
        if match is None:
            missed.append(step)
        else:
            served.append(
                Served(step=step, recorded=match, mocked=not side_effect_free(step.action))
            )
    return LoosePlan(steps=len(run.steps), served=served, missed=missed, skipped=run.skipped)


# Run one action on the box: on a screen, as a batch of one; a refusal is an outcome.
RunStep = Callable[[int, Action], Awaitable[Outcome]]


async def replay_loose(
    plan: LoosePlan, run_step: RunStep | None = None, *, box: str | None = None
) -> LooseReport:
    """Serve the plan's steps in the run's order: a mocked step with its recorded outcome,
    any other through `run_step` on `box` (without one it is left, needing a box)."""
    report = LooseReport(
        steps=plan.steps,
        box=box,
        skipped=list(plan.skipped),
        missed=[StepRef(seq=s.seq, kind=s.kind, key=s.key) for s in plan.missed],
    )
    for served in plan.served:
        step, recorded = served.step, served.recorded
        outcome: Outcome | None = recorded.outcome if served.mocked else None
        if outcome is None and run_step is not None:
            outcome = await run_step(step.screen, step.action)
        if outcome is not None:
            report.attempted += 1
            report.ok += outcome.ok == recorded.outcome.ok
        report.matched.append(
            LooseStep(
                seq=step.seq,
                kind=step.kind,
                type=type_of(step.action),
                key=step.key,
                recorded=recorded.seq,
                mocked=served.mocked,
                outcome=outcome,
                expected=None if served.mocked else recorded.outcome,
            )
        )
    return report


def _call(entry: Entry, key: str, screen: int, action: Action, outcome: Outcome) -> RecordedCall:
    return RecordedCall(
        seq=entry.seq, kind=kind_of(entry), key=key, screen=screen, action=action, outcome=outcome
    )


__all__ = [
    "LOOSE_READS",
    "LooseCall",
    "LoosePlan",
    "LooseRun",
    "RecordedCall",
    "RunStep",
    "Served",
    "match_by_key",
    "plan_loose",
    "replay_loose",
    "run_of_list",
    "run_of_trace",
    "side_effect_free",
    "steps_of_trace",
]
