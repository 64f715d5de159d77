"""Viewer tickets: short-lived, random, kept in memory, each for one box's screen and one
mode. A ticket is the only thing the viewer socket and the viewer page take (no bearer
token): a browser cannot send one on a WebSocket. It is good for `TICKET_SECS` from when
it was made and for as many connections in that time (noVNC reconnects with it), on the
desktop it was made for: a box stopped and resumed since has a new desktop, which a new
ticket shows ("new desktop, new viewer URL"). A restarted server knows none of the old
ones."""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from holm.errors import BadCredential
from holm.wire.api import ViewerMode

TICKET_SECS = 15 * 60
# More live tickets than this and the oldest are forgotten: memory stays bounded.
MAX_TICKETS = 10_000


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class Ticket:
    ticket: str
    box_id: str
    screen: int
    mode: ViewerMode
    expires_at_ms: int
    # The box's `stopped_seq` when it was made: which desktop it shows.
    desktop: int | None
    # Made by a takeover: revoked, and its viewers closed, when the screen is given back.
    takeover: bool = False


class Tickets:
    """The live tickets; `clock` (milliseconds) is injectable so tests can expire one."""

    def __init__(self, clock: Callable[[], int] = wall_ms, secs: int = TICKET_SECS) -> None:
        self.clock = clock
        self.secs = secs
        self._live: dict[str, Ticket] = {}

    def make(
        self,
        box_id: str,
        screen: int,
        mode: ViewerMode,
        desktop: int | None,
        *,
        takeover: bool = False,
    ) -> Ticket:
        self._forget_expired()
        while len(self._live) >= MAX_TICKETS:
            self._live.pop(next(iter(self._live)))
        value = "vt_" + secrets.token_urlsafe(32)
        expires = self.clock() + self.secs * 1000
        made = Ticket(value, box_id, screen, mode, expires, desktop, takeover)
        self._live[value] = made
        return made

    def check(
        self, given: str, box_id: str, screen: int, mode: ViewerMode, desktop: int | None
    ) -> Ticket:
        """The ticket `given` if it is live, for this box, screen and desktop, and allows
        `mode` (a control ticket allows view too); `BadCredential` otherwise, saying no more
        than that (a guess learns nothing)."""
        found = self._find(given)
        if (
            found is None
            or found.expires_at_ms <= self.clock()
            or found.box_id != box_id
            or found.screen != screen
            or found.desktop != desktop
            or (mode == "control" and found.mode != "control")
        ):
            raise BadCredential(
                "no valid viewer ticket for this screen and mode: ask for one with "
                "POST …/screens/{n}/viewer/ticket (they last 15 minutes)"
            )
        return found

    def revoke_takeover(self, box_id: str, screen: int) -> set[str]:
        """Forget the tickets a takeover of this screen made; the ones forgotten."""
        gone = {
            value
            for value, t in self._live.items()
            if t.takeover and t.box_id == box_id and t.screen == screen
        }
        for value in gone:
            del self._live[value]
        return gone

    def _find(self, given: str) -> Ticket | None:
        # Compared in constant time against the one it could be, so timing tells nothing.
        candidate = self._live.get(given)
        if candidate is None or not hmac.compare_digest(candidate.ticket, given):
            return None
        return candidate

    def _forget_expired(self) -> None:
        now = self.clock()
        for value in [v for v, t in self._live.items() if t.expires_at_ms <= now]:
            del self._live[value]


__all__ = ["MAX_TICKETS", "TICKET_SECS", "Ticket", "Tickets", "wall_ms"]
