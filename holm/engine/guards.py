"""What a box must be for each kind of call, as errors with the API's codes; and the one
boundary where an unexpected error from a runtime or a desktop becomes a holm error."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Iterable
from typing import TypeVar

from holm.errors import (
    Denied,
    Gone,
    HolmError,
    NotFound,
    ScreenUnavailable,
    Transport,
    Unavailable,
    Unsupported,
)
from holm.projections.box_state import BoxState
from holm.wire.actions import Action, feature_needed, type_of
from holm.wire.spec import Spec, canonical_spec

log = logging.getLogger(__name__)

T = TypeVar("T")


def known(state: BoxState | None, box_id: str) -> BoxState:
    if state is None:
        raise NotFound(f"no box {box_id}")
    return state


def seen_by(state: BoxState | None, box_id: str, workspace: str | None) -> BoxState:
    """Known to `workspace` (None: the server, which sees every box). Another workspace's
    box is refused as an absent one is, with the same error: its existence is not told."""
    if state is not None and workspace is not None and state.owner != workspace:
        state = None
    return known(state, box_id)


def live(state: BoxState | None, box_id: str) -> BoxState:
    """The box exists and was not removed."""
    state = known(state, box_id)
    if state.removed:
        raise Gone(f"box {box_id} was removed ({state.reason or 'removed'})")
    return state


def usable(state: BoxState | None, box_id: str) -> BoxState:
    """Live, and neither starting nor failed: those refuse every call but reads and
    delete."""
    state = live(state, box_id)
    if state.state == "starting":
        raise Denied(f"box {box_id} is starting; read it until it is ready or failed")
    if state.state == "failed":
        raise Denied(f"box {box_id} failed to start ({state.reason}); delete it", retryable=False)
    return state


def ready(state: BoxState | None, box_id: str) -> BoxState:
    """Usable, with its desktop up: what every call into the box needs."""
    state = usable(state, box_id)
    if state.state in ("paused", "stopped"):
        raise ScreenUnavailable(f"box {box_id} is {state.state}; resume it first")
    if state.state == "unreachable":
        # Its runtime cannot be reached for now: the box comes back when it can.
        raise Unavailable(f"box {box_id} is unreachable ({state.reason})", retryable=True)
    return state


def screen_of(state: BoxState, screen: int, *, drive: bool) -> None:
    """The screen exists; to `drive` it (input, windows, clipboard), an agent must have it,
    or share it with a person (a takeover with `shared: true`)."""
    if not 0 <= screen < state.screens:
        raise NotFound(f"box {state.id} has {state.screens} screen(s); no screen {screen}")
    person = screen < len(state.held_by) and state.held_by[screen] == "person"
    if drive and person and screen not in state.shared:
        raise Denied(f"a person has screen {screen} of box {state.id}")


def features_for(state: BoxState, actions: Iterable[Action]) -> None:
    """The box's spec has the features the actions need (`video` to record): without one,
    they are refused before anything runs or is recorded, on every runtime alike."""
    have = canonical_spec(state.spec or Spec()).desktop.features or []
    for action in actions:
        feature = feature_needed(action)
        if feature is not None and feature not in have:
            raise Unsupported(
                f"{type_of(action)} needs the `{feature}` feature, which the spec of box"
                f" {state.id} leaves out"
            )


async def boundary(call: Awaitable[T], what: str) -> T:
    """Await a runtime or desktop call; anything that is not a holm error (a bug or an
    unmapped lower-layer error) becomes `Transport`, logged with its traceback."""
    try:
        return await call
    except HolmError:
        raise
    except Exception as exc:
        log.exception("%s failed", what)
        raise Transport(f"{what} failed: {type(exc).__name__}: {exc}") from exc
