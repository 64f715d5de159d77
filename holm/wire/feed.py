"""The events feed as served (`GET /v1/events`): an event, a page of them, and the page
limits."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

EventKind = Literal[
    "box.created",
    "box.ready",
    "box.paused",
    "box.stopped",
    "box.removed",
    "box.unreachable",
    "box.failed",
    "screen.taken_over",
    "screen.given_back",
    "image.built",
    "image.removed",
    "runtime.added",
    "runtime.changed",
    "runtime.removed",
    "pool.failing",
    "pool.recovered",
]

LIMIT_DEFAULT = 200
LIMIT_MAX = 1000


class Event(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    seq: int
    at_ms: int
    kind: EventKind
    owner: str | None = None
    box_id: str | None = None
    runtime: str | None = None
    data: dict[str, Any] | None = None


class EventsPage(msgspec.Struct, kw_only=True):
    events: list[Event]
    # Send as `after` to read on; the same `after` again when the page is empty.
    next: int
    more: bool


__all__ = ["LIMIT_DEFAULT", "LIMIT_MAX", "Event", "EventKind", "EventsPage"]
