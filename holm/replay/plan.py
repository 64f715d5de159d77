"""The plan of a fork: a pure function from a source trace (and `up_to`) to the steps a new
box does again and the steps it cannot, with their reason. No I/O.

What is done again, in order (docs/fork.md):
- each `acted` entry with `ok: true`: every action of a batch, page actions included;
- each `executed` entry;
- each `app_launched` entry that did not come from a batch (one with `batch` set is the window
  report of a batch's `launch` step, which its own `acted` entry does again).

What is not: `acted` with `ok: false` (the source refused it, so it did not happen),
`apps_installed` (put applications in the spec instead), frames, reads, lifecycle entries and
anything a person did. `file_written` and `clipboard_set` are listed in `skipped`, because
the trace keeps that they happened but not their bytes; so is a batch's `write_file` or
clipboard set step (`acted`), with the same reason (its bytes are not kept either, and a line
written before they were left out is skipped all the same).

A trace that restarted (`adopted`) replays only what follows its last `adopted` entry: what
came before belongs to a desktop that no longer exists.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Literal

import msgspec

from holm.wire import actions as act
from holm.wire.actions import Action, Exec, Launch, SecretRef
from holm.wire.api import Skipped
from holm.wire.entries import (
    Acted,
    Adopted,
    AppLaunched,
    BoxCreated,
    BoxReady,
    BoxStarted,
    ClipboardSet,
    Entry,
    Executed,
    FileWritten,
    FrameSeen,
    TakeoverStarted,
    acted_key,
    kind_of,
    redacts,
)
from holm.wire.results import ExecResult
from holm.wire.spec import Placement, Spec

# Frames only show a settled screen when it stayed that way for a while before the next step;
# a shorter-lived frame may be an intermediate picture (a page half loaded, text half typed).
SETTLED_MS = 300


# Actions that only read: what they answer comes from the desktop as it is.
READS = (
    act.Apps,
    act.Capture,
    act.Cursor,
    act.Glob,
    act.Grep,
    act.ListFiles,
    act.Look,
    act.PageShot,
    act.Read,
    act.ReadFile,
    act.Snapshot,
    act.Tabs,
    act.Windows,
)
# Actions that read, or work on files and commands: they leave the screen as it was.
OFF_SCREEN = (*READS, act.Clipboard, act.Exec, act.Record, act.WriteFile)


class DoAction(msgspec.Struct, tag="action", kw_only=True, omit_defaults=True):
    """One action of a batch, done again on the same screen in one batch with the other
    steps of its source batch (`interpreter.batches_of`). `sealed`: a person's typed text,
    sealed under the source trace's key, which the interpreter opens to type it again."""

    screen: int
    action: Action
    sealed: str | None = None


class DoExec(msgspec.Struct, tag="exec", kw_only=True, omit_defaults=True):
    argv: list[str | SecretRef]
    timeout_ms: int
    env: dict[str, str | SecretRef] = msgspec.field(default_factory=dict)


class DoLaunch(msgspec.Struct, tag="launch", kw_only=True):
    """An application opened outside a batch (its `app_launched` entry has no `batch`)."""

    screen: int
    app: str
    args: list[str]


Do = DoAction | DoExec | DoLaunch


class ExpectedFrame(msgspec.Struct, kw_only=True):
    """The screen as the source last recorded it before its next step: the `frame` entry
    `seq`, its pixel hash, and how long it stayed before the next step (None: it stayed until
    the trace's end)."""

    screen: int
    seq: int
    hash: str
    held_ms: int | None

    def settled(self, settled_ms: int = SETTLED_MS) -> bool:
        return self.held_ms is None or self.held_ms >= settled_ms


class Expected(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a strict replay compares after the step: it succeeded (always, since only steps
    that succeeded are planned), an exec's outcome, and the screen the source showed next."""

    exec: ExecResult | None = None
    frame: ExpectedFrame | None = None


class Step(msgspec.Struct, kw_only=True):
    seq: int
    at_ms: int
    kind: Literal["acted", "executed", "app_launched"]
    # The step's identity for aligning two traces; a launch outside a batch gets the key of
    # the `acted` launch that replays it, so that a source and its fork align.
    key: str
    do: Do
    expect: Expected = msgspec.field(default_factory=Expected)
    # The batch of the source step and its index in it: a strict replay looks at frames only
    # at the end of a source batch, where the screen had time to settle.
    batch: str | None = None
    index: int = 0


class Origin(msgspec.Struct, kw_only=True):
    """Where the source box came from: the spec and placement to create the fork with."""

    runtime: str
    spec: Spec
    placement: Placement
    # When the source desktop was ready (or created, or adopted): the first step is paced
    # from it.
    ready_at_ms: int


class Plan(msgspec.Struct, kw_only=True):
    steps: list[Step]
    skipped: list[Skipped]
    origin: Origin | None = None
    # The last seq planned from (the given `up_to`, or the last entry of the trace).
    up_to: int | None = None


def plan_fork(
    entries: Sequence[Entry], up_to: int | None = None, *, include_person: bool = False
) -> Plan:
    """The steps a fork of this trace does again (up to and including seq `up_to`), and the
    ones it cannot do, with why. A person's entries are left out, unless `include_person`:
    then what a person did through a control viewer (`acted` entries, actor `person`) is
    done again as the agent's steps (the takeover itself is not)."""
    kept = [e for e in entries if up_to is None or e.seq <= up_to]
    last_adopted = max((i for i, e in enumerate(entries) if isinstance(e, Adopted)), default=-1)
    replayable = list(entries[last_adopted + 1 :])

    steps: list[Step] = []
    skipped: list[Skipped] = list(_pruned(replayable))
    for entry in replayable:
        if entry.actor == "person" and not (include_person and isinstance(entry, Acted)):
            continue
        step = _step(entry)
        if step is not None:
            steps.append(step)
            continue
        why = why_skipped(entry)
        if why is not None:
            skipped.append(Skipped(seq=entry.seq, kind=kind_of(entry), why=why))

    # Frames are attached over the whole trace, so that the last step before `up_to` still
    # knows how long its screen stayed before the next (unplanned) step.
    _attach_frames(steps, replayable)
    within = [s for s in steps if up_to is None or s.seq <= up_to]
    return Plan(
        steps=within,
        skipped=sorted(
            (s for s in skipped if up_to is None or s.seq <= up_to), key=lambda s: s.seq
        ),
        origin=_origin(kept),
        up_to=kept[-1].seq if kept else None,
    )


def _pruned(entries: Sequence[Entry]) -> Iterator[Skipped]:
    """The runs of seqs a prune by age dropped from the trace (docs/storage.md): what they
    did cannot be done again, and the report says so rather than fork a shorter run
    silently."""
    for before, entry in itertools.pairwise(entries):
        if entry.seq > before.seq + 1:
            first, last = before.seq + 1, entry.seq - 1
            yield Skipped(
                seq=first,
                kind="pruned",
                why=f"entries {first} to {last} were pruned by age (HOLM_KEEP_ENTRIES_SECS): "
                "what they did is not done again",
            )


def _step(entry: Entry) -> Step | None:
    match entry:
        case Acted(ok=True) if not redacts(entry.action):
            return Step(
                seq=entry.seq,
                at_ms=entry.at_ms,
                kind="acted",
                key=entry.key,
                do=DoAction(screen=entry.screen, action=entry.action, sealed=entry.sealed),
                expect=Expected(exec=acted_exec_result(entry)),
                batch=entry.batch,
                index=entry.index,
            )
        case Executed():
            return Step(
                seq=entry.seq,
                at_ms=entry.at_ms,
                kind="executed",
                key=entry.key,
                do=DoExec(argv=list(entry.argv), timeout_ms=entry.timeout_ms, env=dict(entry.env)),
                expect=Expected(exec=executed_result(entry)),
            )
        case AppLaunched(batch=None):
            return Step(
                seq=entry.seq,
                at_ms=entry.at_ms,
                kind="app_launched",
                key=launch_key(entry),
                do=DoLaunch(screen=entry.screen, app=entry.app, args=list(entry.args)),
            )
        case _:
            return None


def launch_key(entry: AppLaunched) -> str:
    """The key of a launch outside a batch: that of the `acted` launch that does it again,
    so that a source and its fork align."""
    return acted_key(entry.screen, Launch(app=entry.app, args=list(entry.args)))


def executed_result(entry: Executed) -> ExecResult:
    return ExecResult(
        code=entry.code, stdout=entry.stdout, stderr=entry.stderr, timed_out=entry.timed_out
    )


def acted_exec_result(entry: Acted) -> ExecResult | None:
    """The result an `exec` step of a batch recorded."""
    if not isinstance(entry.action, Exec) or entry.result is None:
        return None
    try:
        return msgspec.convert(entry.result, ExecResult)
    except msgspec.ValidationError:
        return None


def why_skipped(entry: Entry) -> str | None:
    """Why a fork cannot do this entry again (its bytes are not in the trace), or None."""
    match entry:
        case FileWritten():
            return _why_file(entry.path)
        case ClipboardSet():
            return _why_clipboard(entry.selection, entry.screen)
        case Acted(ok=True, action=act.WriteFile(what=what)):
            return _why_file(what.path)
        case Acted(ok=True, action=act.Clipboard(selection=selection)):
            return _why_clipboard(selection, entry.screen)
        case Acted(ok=True, action=act.Type(text="", secret=None), sealed=None, bytes=int()):
            return "the trace kept only the length of what a person typed, not the text"
        case _:
            return None


def _why_file(path: str) -> str:
    return f"the trace records that {path} was written, not what went into it"


def _why_clipboard(selection: str, screen: int) -> str:
    return (
        f"the trace records that the {selection} selection of screen {screen} was set, not its text"
    )


def _origin(entries: Iterable[Entry]) -> Origin | None:
    """The spec and placement of the last `box_created`, or of a later `adopted` that carries
    them (the adopting server's store had lost the box)."""
    origin: Origin | None = None
    for entry in entries:
        match entry:
            case BoxCreated():
                origin = Origin(
                    runtime=entry.runtime,
                    spec=entry.spec,
                    placement=entry.placement,
                    ready_at_ms=entry.at_ms,
                )
            case Adopted(spec=Spec() as spec):
                placement = entry.placement if entry.placement is not None else Placement()
                origin = Origin(
                    runtime=entry.runtime, spec=spec, placement=placement, ready_at_ms=entry.at_ms
                )
            case Adopted() if origin is not None:
                origin.ready_at_ms = entry.at_ms
            case BoxReady() | BoxStarted() if origin is not None:
                origin.ready_at_ms = entry.at_ms
            case _:
                pass
    return origin


def _attach_frames(steps: list[Step], entries: Sequence[Entry]) -> None:
    """Give each step that ends a source batch the last frame its screen showed before the
    next step began (or a person took the screen: what they did is not replayed), with how
    long that frame stayed."""
    positions = {e.seq: i for i, e in enumerate(entries)}
    for n, step in enumerate(steps):
        screen = _screen_of(step.do)
        if screen is None or not _ends_batch(steps, n) or not _batch_touches_screen(steps, n):
            continue
        following = steps[n + 1] if n + 1 < len(steps) else None
        end = positions[following.seq] if following is not None else len(entries)
        end_at_ms = following.at_ms if following is not None else None
        last: FrameSeen | None = None
        for entry in entries[positions[step.seq] + 1 : end]:
            if isinstance(entry, TakeoverStarted) and entry.screen == screen:
                end_at_ms = entry.at_ms
                break
            if isinstance(entry, FrameSeen) and entry.screen == screen:
                last = entry
        if last is None:
            continue
        held = end_at_ms - last.at_ms if end_at_ms is not None else None
        step.expect.frame = ExpectedFrame(
            screen=screen, seq=last.seq, hash=last.frame, held_ms=held
        )


def _batch_touches_screen(steps: list[Step], n: int) -> bool:
    """Whether the batch that step `n` ends has a step that can change the screen: the
    screen after a batch of commands or file steps is whatever the desktop did meanwhile."""
    batch = steps[n].batch
    first = n
    while batch is not None and first > 0 and steps[first - 1].batch == batch:
        first -= 1
    return any(_touches_screen(step.do) for step in steps[first : n + 1])


def _touches_screen(do: Do) -> bool:
    match do:
        case DoAction(action=act.OnNode(what=what)):
            return not isinstance(what, act.NODE_READS)
        case DoAction(action=action):
            return not isinstance(action, OFF_SCREEN)
        case DoLaunch():
            return True
        case DoExec():
            return False


def _screen_of(do: Do) -> int | None:
    match do:
        case DoAction() | DoLaunch():
            return do.screen
        case DoExec():
            return None


def _ends_batch(steps: list[Step], n: int) -> bool:
    step = steps[n]
    if step.batch is None or n + 1 >= len(steps):
        return True
    return steps[n + 1].batch != step.batch


__all__ = [
    "OFF_SCREEN",
    "READS",
    "SETTLED_MS",
    "Do",
    "DoAction",
    "DoExec",
    "DoLaunch",
    "Expected",
    "ExpectedFrame",
    "Origin",
    "Plan",
    "Skipped",
    "Step",
    "acted_exec_result",
    "acted_key",
    "executed_result",
    "launch_key",
    "plan_fork",
    "why_skipped",
]
