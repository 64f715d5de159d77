"""A box's state, folded from its trace: `apply(state, entry)` is pure, and `fold` is
`apply` over a sequence, so the live state and a state rebuilt from the log are equal.

Lifecycle (the entry → the state it leaves):

    box_created → starting        box_ready   → ready       box_paused  → paused
    box_resumed → ready           box_stopped → stopped     box_started → starting
    box_failed  → failed (why)    box_unreachable → unreachable (reason)
    gone        → gone, removed (reason)                    box_deleted → gone, removed
    adopted     → ready (and the box itself, when the trace has no box_created)

`removed` is sticky: a removed box leaves the list and answers 410 whatever follows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, TypeVar

import msgspec

from holm.wire.api import BoxStateName, ForkOrigin
from holm.wire.entries import (
    Acted,
    Adopted,
    AppLaunched,
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
    BrowserRestarted,
    ClipboardRead,
    ClipboardSet,
    Entry,
    Executed,
    FileRead,
    FileWritten,
    ForkedFrom,
    FrameSeen,
    ImageBuilt,
    ImageRemoved,
    Imported,
    PageCaptured,
    PoolFailing,
    PoolRecovered,
    RuntimeAdded,
    RuntimeRemoved,
    SecretRemoved,
    SecretSet,
    TakeoverEnded,
    TakeoverStarted,
    kind_of,
)
from holm.wire.spec import DEFAULT_HEIGHT, DEFAULT_WIDTH, Placement, Spec, canonical_spec

Holder = Literal["agent", "person"]

DELETED_REASON = "deleted"
# The reason of the `gone` the server records for a box its runtime no longer has.
LOST_REASON = "the runtime no longer has the box"

_T = TypeVar("_T")
# What a box did that changes nothing of its state but when it was last used.
_STEPS: tuple[type[Entry], ...] = (
    Acted,
    Executed,
    AppLaunched,
    AppsInstalled,
    FileWritten,
    FileRead,
    ClipboardSet,
    ClipboardRead,
    PageCaptured,
    # Not a step, but no part of the state either.
    BrowserRestarted,
)
_AGENT: tuple[Holder, ...] = ("agent",)


class NotABoxTrace(ValueError):
    """The entries do not describe a box: they start with something other than
    `box_created` or `adopted`, create it twice, or belong to the server trace."""


class BoxState(msgspec.Struct, kw_only=True, frozen=True):
    id: str
    runtime: str
    state: BoxStateName
    # BoxGone or deleted: the box leaves the list and each call to it answers 410.
    removed: bool = False
    reason: str | None = None
    spec: Spec | None = None
    placement: Placement | None = None
    spec_digest: str | None = None
    created_at_ms: int
    expires_at_ms: int | None = None
    idle_timeout_secs: int | None = None
    # The last entry by an agent or a person: the idle reaper's clock. The server's own
    # entries (adoption, removal) are not use.
    last_used_ms: int
    owner: str | None = None
    screens: int = 1
    width: int = DEFAULT_WIDTH
    height: int = DEFAULT_HEIGHT
    # One item per screen: the hash of the last frame seen, and who has the screen.
    frames: tuple[str | None, ...] = (None,)
    # How many `frame` entries the trace holds: how often a screen changed.
    frames_seen: int = 0
    held_by: tuple[Holder, ...] = ("agent",)
    # The screens a person holds with `shared: true`: the agent may still drive them.
    shared: frozenset[int] = frozenset()
    viewer_urls: tuple[str, ...] = ()
    devtools_url: str | None = None
    # The seq of the last `box_stopped` (-1: none): a resume after it brings up a new
    # desktop, so a viewer ticket made before it no longer opens (boxes.md: "new desktop,
    # new viewer URL").
    stopped_seq: int = -1
    forked_from: ForkOrigin | None = None
    adopted: bool = False
    # The seq of the last entry folded in, so a reader can go on from there.
    last_seq: int = -1


def apply(state: BoxState | None, entry: Entry) -> BoxState:
    """The state after `entry`. Never changes `state`."""
    if state is None:
        return _first(entry)
    used = entry.at_ms if _is_use(entry) else state.last_used_ms
    step: dict[str, object] = {"last_seq": entry.seq, "last_used_ms": used}
    # The kinds that happen most (steps and frames) come first: `match` tries in order.
    match entry:
        case FrameSeen(screen=screen, frame=frame):
            step["frames"] = _put(state.frames, screen, frame, None)
            step["frames_seen"] = state.frames_seen + 1
        case _ if isinstance(entry, _STEPS):
            pass
        case TakeoverStarted(screen=screen, shared=shared):
            step["held_by"] = _put(state.held_by, screen, "person", "agent")
            step["shared"] = state.shared | {screen} if shared else state.shared - {screen}
        case TakeoverEnded(screen=screen):
            step["held_by"] = _put(state.held_by, screen, "agent", "agent")
            step["shared"] = state.shared - {screen}
        case BoxReady(viewer_urls=viewer_urls, devtools_url=devtools_url):
            step.update(state="ready", reason=None, viewer_urls=tuple(viewer_urls))
            step["devtools_url"] = devtools_url
        case BoxPaused():
            step.update(state="paused", reason=None)
        case BoxResumed():
            step.update(state="ready", reason=None)
        case BoxStopped():
            # The desktop is released: its viewers, frames and takeovers end with it.
            step.update(state="stopped", reason=None, **_no_desktop(state.screens))
            step["stopped_seq"] = entry.seq
        case BoxStarted():
            step.update(state="starting", reason=None)
        case BoxFailed(why=why):
            step.update(state="failed", reason=why)
        case BoxUnreachable(reason=reason):
            step.update(state="unreachable", reason=reason)
        case BoxGone(reason=reason):
            step.update(state="gone", removed=True, reason=reason)
        case BoxDeleted():
            step.update(state="gone", removed=True, reason=DELETED_REASON)
        case ForkedFrom(source=source, up_to=up_to):
            step["forked_from"] = ForkOrigin(source=source, up_to=up_to)
        case Imported():
            pass
        case Adopted():
            step.update(state="ready", reason=None, adopted=True, **_adopted_fields(state, entry))
        case BoxCreated():
            raise NotABoxTrace(f"entry {entry.seq}: box_created again, in a box already created")
        case (
            ImageBuilt()
            | ImageRemoved()
            | RuntimeAdded()
            | RuntimeRemoved()
            | SecretSet()
            | SecretRemoved()
            | PoolFailing()
            | PoolRecovered()
        ):
            raise NotABoxTrace(f"entry {entry.seq}: {kind_of(entry)} belongs to the server trace")
        case _:
            raise TypeError(f"not a trace entry: {entry!r}")
    return msgspec.structs.replace(state, **step)


def fold(entries: Iterable[Entry], state: BoxState | None = None) -> BoxState | None:
    """`apply` over `entries`, from `state` (nothing when None). None for no entries."""
    for entry in entries:
        state = apply(state, entry)
    return state


def fold_known(
    entries: Iterable[Entry], state: BoxState | None = None
) -> tuple[BoxState | None, list[NotABoxTrace]]:
    """`fold`, leaving out each entry that does not fit a box's trace, and the reasons for
    the caller to report: the server keeps a box whose trace holds a stray entry, and a
    reader of the trace files must see the box it does."""
    refused: list[NotABoxTrace] = []
    for entry in entries:
        try:
            state = apply(state, entry)
        except NotABoxTrace as exc:
            refused.append(exc)
    return state, refused


def state_bearing(entries: Iterable[Entry]) -> set[int]:
    """The seqs of `entries` (a trace's oldest, in order, with at least one entry after
    them) that its state is folded from: `fold` of only these, then of what follows, is
    the state `fold` of all of it is. The rest is what a prune by age may drop.

    Kept: the first entry (it makes the box); every `adopted` (what it fills in depends on
    what came before), `gone` and `box_deleted` (removal sticks), and entry of a kind this
    holm does not fold; and the last entry to set each part of the state (the lifecycle
    state, the desktop's URLs and screens, each screen's frame and holder, the fork
    origin, the last use). `last_seq` is the entries' after them."""
    latest: dict[tuple[str, int], int] = {}
    kept: set[int] = set()
    for entry in entries:
        if not kept:
            kept.add(entry.seq)
        if _is_use(entry):
            latest["used", 0] = entry.seq
        match entry:
            case FrameSeen(screen=screen):
                latest["frame", screen] = entry.seq
            case TakeoverStarted(screen=screen) | TakeoverEnded(screen=screen):
                latest["holder", screen] = entry.seq
            case BoxPaused() | BoxResumed() | BoxStarted() | BoxFailed() | BoxUnreachable():
                latest["state", 0] = entry.seq
            case BoxReady():
                latest["state", 0] = latest["urls", 0] = entry.seq
            case BoxStopped():
                # It ends every screen's frame and holder: the ones before it are spent.
                for part in [part for part in latest if part[0] in ("frame", "holder")]:
                    del latest[part]
                latest["state", 0] = latest["urls", 0] = latest["desktop", 0] = entry.seq
            case ForkedFrom():
                latest["fork", 0] = entry.seq
            case Adopted():
                # Only its unconditional part supersedes: the state it sets.
                latest["state", 0] = entry.seq
                kept.add(entry.seq)
            case _ if isinstance(entry, _STEPS):
                pass
            case _:
                kept.add(entry.seq)
    return kept | set(latest.values())


def borne(state: BoxState | None) -> BoxState | None:
    """What `state_bearing` entries bear of a state: all of it but `frames_seen`, a count of
    the `frame` entries the trace holds, which drops with them (docs/storage.md)."""
    return None if state is None else msgspec.structs.replace(state, frames_seen=0)


def _is_use(entry: Entry) -> bool:
    """A box is in use while a client or a person does something in it. A frame taken
    while the agent holds the screen is the screen changing by itself (an animation, a
    clock), which must not keep an idle box alive; one during a takeover is a person at
    work."""
    return entry.actor != "system" and not (isinstance(entry, FrameSeen) and entry.actor == "agent")


def _first(entry: Entry) -> BoxState:
    match entry:
        case BoxCreated():
            spec = canonical_spec(entry.spec).desktop
            return BoxState(
                id=entry.box_id,
                runtime=entry.runtime,
                state="starting",
                spec=entry.spec,
                placement=entry.placement,
                spec_digest=entry.spec_digest,
                created_at_ms=entry.at_ms,
                expires_at_ms=entry.expires_at_ms,
                idle_timeout_secs=entry.placement.idle_timeout_secs,
                last_used_ms=entry.at_ms,
                owner=entry.owner,
                width=spec.width or DEFAULT_WIDTH,
                height=spec.height or DEFAULT_HEIGHT,
                screens=spec.screens,
                frames=(None,) * spec.screens,
                held_by=_AGENT * spec.screens,
                last_seq=entry.seq,
            )
        case Adopted():
            # The store lost the box's record (or never had it): the adoption names it.
            bare = BoxState(
                id=entry.box_id,
                runtime=entry.runtime,
                state="ready",
                created_at_ms=entry.at_ms,
                last_used_ms=entry.at_ms,
                adopted=True,
                last_seq=entry.seq,
            )
            return msgspec.structs.replace(bare, **_adopted_fields(bare, entry))
        case _:
            raise NotABoxTrace(
                f"entry {entry.seq}: a box's trace starts with box_created or adopted,"
                f" not {kind_of(entry)}"
            )


def _adopted_fields(state: BoxState, entry: Adopted) -> dict[str, object]:
    """What an adoption fills in: only what the box's record does not have already."""
    fields: dict[str, object] = {}
    if state.spec is None and entry.spec is not None:
        desktop = canonical_spec(entry.spec).desktop
        fields.update(
            spec=entry.spec,
            width=desktop.width or DEFAULT_WIDTH,
            height=desktop.height or DEFAULT_HEIGHT,
            **_no_desktop(desktop.screens),
        )
    if state.placement is None and entry.placement is not None:
        fields["placement"] = entry.placement
        fields["idle_timeout_secs"] = entry.placement.idle_timeout_secs
    for name in ("spec_digest", "expires_at_ms", "owner"):
        if getattr(state, name) is None and getattr(entry, name) is not None:
            fields[name] = getattr(entry, name)
    return fields


def _no_desktop(screens: int) -> dict[str, object]:
    return {
        "screens": screens,
        "frames": (None,) * screens,
        "held_by": _AGENT * screens,
        "shared": frozenset(),
        "viewer_urls": (),
        "devtools_url": None,
    }


def _put(items: tuple[_T, ...], index: int, value: _T, filler: _T) -> tuple[_T, ...]:
    """`items` with `items[index] = value`, grown with `filler` when the screen is past
    the end (an entry for a screen the spec did not ask for is still kept)."""
    if index < 0:
        raise NotABoxTrace(f"screen {index} is not a screen")
    if index >= len(items):
        items = items + (filler,) * (index + 1 - len(items))
    return (*items[:index], value, *items[index + 1 :])


__all__ = [
    "DELETED_REASON",
    "LOST_REASON",
    "BoxState",
    "Holder",
    "NotABoxTrace",
    "apply",
    "borne",
    "fold",
    "fold_known",
    "state_bearing",
]
