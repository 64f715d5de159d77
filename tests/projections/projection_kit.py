"""What the projection tests share: a builder of hand-made traces and the hypothesis
strategies (box lifecycles with other entries between, and any entry at all). Imported by
name (pyproject's pytest `pythonpath` lists this folder), since pytest runs with
--import-mode=importlib."""

from __future__ import annotations

from typing import Any

import msgspec.inspect as mi
import trace_kit
from hypothesis import reject
from hypothesis import strategies as st
from trace_kit import T0

from holm.errors import ErrorBody
from holm.wire.actions import Click, OpenUrl, Type
from holm.wire.entries import (
    Acted,
    Actor,
    Adopted,
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
    ClipboardSet,
    Entry,
    Executed,
    FileWritten,
    ForkedFrom,
    FrameSeen,
    ImageBuilt,
    ImageRemoved,
    PageCaptured,
    PoolFailing,
    PoolRecovered,
    TakeoverEnded,
    TakeoverStarted,
    step_key,
)
from holm.wire.spec import DesktopSpec, Placement, Spec, spec_digest
from holm.wire.values import Point


class TraceBuilder(trace_kit.TraceBuilder):
    """A box's entries (see trace_kit.TraceBuilder), with the box's id for its
    `box_created`."""

    def __init__(self, box_id: str = "box_test", start_ms: int = T0) -> None:
        super().__init__(start_ms)
        self.box_id = box_id

    def created(
        self,
        spec: Spec | None = None,
        *,
        owner: str | None = None,
        runtime: str = "local",
        placement: Placement | None = None,
    ) -> BoxCreated:
        spec = spec or Spec()
        created: BoxCreated = self.add(
            BoxCreated,
            gap_ms=0,
            box_id=self.box_id,
            runtime=runtime,
            spec=spec,
            placement=placement or Placement(runtime=runtime, expires_after_secs=600),
            spec_digest=spec_digest(spec),
            expires_at_ms=self.now + 600_000,
            owner=owner,
        )
        return created

    def acted(self, action: Any = None, *, screen: int = 0, ok: bool = True, **kw: Any) -> Acted:
        action = action or Click(at=Point(x=1, y=2))
        error = None if ok else ErrorBody(code="failed", message="it did not work")
        key = step_key("acted", {"screen": screen, "action": action})
        acted: Acted = self.add(
            Acted, screen=screen, action=action, ok=ok, key=key, error=error, **kw
        )
        return acted

    def frame(self, screen: int = 0, *, actor: Actor = "agent", name: str = "f") -> FrameSeen:
        frame: FrameSeen = self.add(
            FrameSeen, actor=actor, screen=screen, frame=f"sha256:{name}", width=1280, height=800
        )
        return frame

    def executed(self, argv: list[str], code: int | None, timed_out: bool = False) -> Executed:
        executed: Executed = self.add(
            Executed, argv=argv, code=code, timed_out=timed_out, key=step_key("executed", argv)
        )
        return executed


# Strategies


# Lifecycle entries a box may have next, by the state it is in (its reason left out).
_NEXT: dict[str, list[type[Any]]] = {
    "starting": [BoxReady, BoxFailed, BoxUnreachable, BoxGone, BoxDeleted],
    "ready": [BoxPaused, BoxStopped, BoxUnreachable, BoxGone, BoxDeleted, Adopted],
    "paused": [BoxResumed, BoxStopped, BoxGone, BoxDeleted],
    "stopped": [BoxStarted, BoxResumed, BoxGone, BoxDeleted],
    "unreachable": [BoxReady, BoxGone, BoxDeleted],
    "failed": [BoxDeleted],
}

STATE_AFTER: dict[type[Any], str] = {
    BoxCreated: "starting",
    BoxReady: "ready",
    BoxPaused: "paused",
    BoxResumed: "ready",
    BoxStopped: "stopped",
    BoxStarted: "starting",
    BoxFailed: "failed",
    BoxUnreachable: "unreachable",
    BoxGone: "gone",
    BoxDeleted: "gone",
    Adopted: "ready",
}

_SPECS = [
    Spec(),
    Spec(desktop=DesktopSpec(width=1024, height=768, screens=2)),
    Spec(desktop=DesktopSpec(screens=3)),
]
_ACTIONS = [Click(at=Point(x=3, y=4)), Type(text="hi"), OpenUrl(url="https://example.com")]


@st.composite
def box_trace(
    draw: st.DrawFn,
    box_id: str = "box_prop",
    start_ms: int = T0,
    max_gap_ms: int = 1000,
    max_len: int = 40,
) -> list[Entry]:
    """A valid box lifecycle (created or adopted first; each lifecycle entry allowed by the
    state before it; nothing after removal) with other entries between: steps, frames,
    commands, takeovers, files. Gaps between entries may be 0 ms."""
    entries: list[Entry] = []
    now = start_ms
    owner = draw(st.sampled_from([None, "ws_a", "ws_b"]))
    spec = draw(st.sampled_from(_SPECS))
    screens = spec.desktop.screens

    def add(cls: type[Any], actor: Actor, **fields: Any) -> None:
        nonlocal now
        now += draw(st.integers(0, max_gap_ms))
        entries.append(cls(seq=len(entries), at_ms=now, actor=actor, **fields))

    if draw(st.booleans()) or draw(st.booleans()):
        add(
            BoxCreated,
            "agent",
            box_id=box_id,
            runtime="local",
            spec=spec,
            placement=Placement(idle_timeout_secs=draw(st.sampled_from([None, 900]))),
            spec_digest=spec_digest(spec),
            expires_at_ms=now + 3_600_000,
            owner=owner,
        )
        state = "starting"
        if draw(st.booleans()):
            add(
                ForkedFrom, "agent", source="box_source", up_to=draw(st.none() | st.integers(0, 99))
            )
    else:
        knows = draw(st.booleans())
        add(
            Adopted,
            "system",
            box_id=box_id,
            runtime="docker",
            spec=spec if knows else None,
            placement=Placement() if knows else None,
            spec_digest=spec_digest(spec) if knows else None,
            expires_at_ms=now + 600_000 if knows else None,
            owner=owner,
        )
        state = "ready"
        if not knows:
            screens = 1
    for _ in range(draw(st.integers(0, max_len))):
        if draw(st.integers(0, 3)) == 0:
            cls = draw(st.sampled_from(_NEXT[state]))
            add(cls, draw(st.sampled_from(["agent", "system"])), **_lifecycle_fields(cls, box_id))
            if cls in (BoxGone, BoxDeleted):
                break
            state = STATE_AFTER[cls]
            continue
        screen = draw(st.integers(0, screens - 1))
        match draw(st.integers(0, 6)):
            case 0:
                action = draw(st.sampled_from(_ACTIONS))
                ok = draw(st.booleans())
                error = None if ok else ErrorBody(code="failed", message="no")
                add(Acted, "agent", screen=screen, action=action, ok=ok, key="k", error=error)
            case 1 | 2:
                actor: Actor = draw(st.sampled_from(["agent", "person"]))
                name = draw(st.sampled_from(["sha256:a", "sha256:b", "sha256:c"]))
                add(FrameSeen, actor, screen=screen, frame=name, width=1280, height=800)
            case 3:
                timed_out = draw(st.booleans())
                code = None if timed_out else draw(st.sampled_from([0, 1]))
                add(Executed, "agent", argv=["ls"], code=code, timed_out=timed_out, key="k")
            case 4:
                add(TakeoverStarted, "agent", screen=screen, shared=draw(st.booleans()))
            case 5:
                add(TakeoverEnded, "agent", screen=screen)
            case _:
                cls = draw(st.sampled_from([FileWritten, ClipboardSet, PageCaptured]))
                add(cls, "agent", **_other_fields(cls, screen))
    return entries


def _lifecycle_fields(cls: type[Any], box_id: str) -> dict[str, Any]:
    if cls is BoxFailed:
        return {"why": "it did not start"}
    if cls in (BoxUnreachable, BoxGone):
        return {"reason": "expired" if cls is BoxGone else "lost"}
    if cls is Adopted:
        return {"box_id": box_id, "runtime": "local"}
    if cls is BoxReady:
        return {"viewer_urls": [f"http://127.0.0.1/{box_id}/0"]}
    return {}


def _other_fields(cls: type[Any], screen: int) -> dict[str, Any]:
    if cls is FileWritten:
        return {"path": "/tmp/a", "bytes": 3}
    if cls is ClipboardSet:
        return {"screen": screen, "selection": "clipboard", "bytes": 3}
    return {"format": "png", "bytes": 10, "screen": screen}


@st.composite
def server_trace(draw: st.DrawFn, start_ms: int = T0, max_gap_ms: int = 1000) -> list[Entry]:
    entries: list[Entry] = []
    now = start_ms
    for seq in range(draw(st.integers(0, 6))):
        now += draw(st.integers(0, max_gap_ms))
        envelope = {"seq": seq, "at_ms": now, "actor": "system", "runtime": "docker"}
        match draw(st.sampled_from(["built", "removed", "failing", "recovered"])):
            case "built":
                entries.append(ImageBuilt(**envelope, image="i", spec_digest="d"))
            case "removed":
                entries.append(ImageRemoved(**envelope, image="i", spec_digest="d"))
            case "failing":
                entries.append(PoolFailing(**envelope, spec_digest="d", why="w", retry_at_ms=now))
            case _:
                entries.append(PoolRecovered(**envelope, spec_digest="d"))
    return entries


# Any value of a type, from its msgspec description: every entry kind, with every action,
# with fields anywhere in their type's range (not only what an engine writes).

_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)


def from_type_info(info: mi.Type) -> st.SearchStrategy[Any]:
    match info:
        case mi.IntType():
            return st.integers(-(2**40), 2**40)
        case mi.FloatType():
            return st.floats(allow_nan=False)
        case mi.StrType():
            return st.text(max_size=120)
        case mi.BoolType():
            return st.booleans()
        case mi.NoneType():
            return st.none()
        case mi.LiteralType(values=values):
            return st.sampled_from(values)
        case mi.UnionType(types=types):
            return st.one_of([from_type_info(t) for t in types])
        case mi.ListType(item_type=item):
            return st.lists(from_type_info(item), max_size=4)
        case mi.DictType(key_type=key, value_type=value):
            return st.dictionaries(from_type_info(key), from_type_info(value), max_size=4)
        case mi.StructType(cls=cls, fields=fields):
            return _checked(cls, {f.name: _field(f) for f in fields})
        case mi.AnyType():
            return _JSON
        case _:
            raise NotImplementedError(f"no strategy for {info!r}")


# The names a struct checks in `__post_init__` (holm/wire/actions.py): a secret's, an
# environment variable's. Drawn from their patterns, since text at random is almost never one.
_SECRET_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,20}", fullmatch=True)
_VARIABLES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)


def _field(field: mi.Field) -> st.SearchStrategy[Any]:
    if field.name == "secret" and isinstance(field.type, mi.StrType):
        return _SECRET_NAMES
    if field.name == "secret" and isinstance(field.type, mi.UnionType):
        return st.none() | _SECRET_NAMES
    if field.name == "env" and isinstance(field.type, mi.DictType):
        return st.dictionaries(_VARIABLES, from_type_info(field.type.value_type), max_size=3)
    return from_type_info(field.type)


@st.composite
def _checked(draw: st.DrawFn, cls: type, fields: dict[str, st.SearchStrategy[Any]]) -> Any:
    """A `cls` of drawn fields; a draw its own checks refuse (a text and a secret both given)
    is not a value of the type, and is drawn again."""
    values = {name: draw(strategy) for name, strategy in fields.items()}
    try:
        return cls(**values)
    except ValueError:
        reject()


any_entry: st.SearchStrategy[Entry] = from_type_info(mi.type_info(Entry))


def kind(entry: object) -> str:
    return str(type(entry).__struct_config__.tag)  # type: ignore[attr-defined]
