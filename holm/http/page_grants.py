"""Page grants: what a served trace page's "fork from here" button sends as its bearer
token. The page is read with the caller's token (or with auth off); its script must then
call `POST …/fork` and ask for the new box's viewer ticket, and a page never holds the
caller's token. So the route that serves the page makes a grant and puts it in the page:
random, kept in memory, good for `GRANT_SECS` and for exactly two things, each as the
caller who read the page:

- `POST /v1/boxes/{id}/fork` of the box whose trace the page shows, with `up_to` alone
  (no placement, branches, secrets or a person's steps: what the button sends);
- `POST /v1/boxes/{fork}/screens/{n}/viewer/ticket` with `mode: view`, of a box that a
  fork with this grant made (the live viewer the page then opens).

Any other route, or another box, refuses it as a wrong token (401). A grant made from a
workspace's key ends when that key is removed. A restarted server knows none of them."""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from aiohttp import web

from holm.errors import BadCredential, Denied

from .viewer.tickets import wall_ms

GRANT_PREFIX = "pg_"
GRANT_SECS = 15 * 60
# More live grants than this and the oldest are forgotten: memory stays bounded.
MAX_GRANTS = 10_000

FORK_PATH = "/v1/boxes/{id}/fork"
TICKET_PATH = "/v1/boxes/{id}/screens/{screen}/viewer/ticket"


class GrantDenied(Denied):
    """A grant's call with more than its button sends: 403, and no retry changes it."""

    status = 403
    retryable_default = False


@dataclass
class PageGrant:
    grant: str
    box_id: str
    # The workspace of the caller who read the page (None: the server), and the digest of
    # the key it read it with, if a workspace's.
    workspace: str | None
    key_digest: str | None
    expires_at_ms: int
    # The boxes forks made with this grant: whose viewer tickets it may ask for.
    forks: set[str] = field(default_factory=set)


class PageGrants:
    """The live grants; `clock` (milliseconds) is injectable so tests can expire one."""

    def __init__(self, clock: Callable[[], int] = wall_ms, secs: int = GRANT_SECS) -> None:
        self.clock = clock
        self.secs = secs
        self._live: dict[str, PageGrant] = {}

    def make(self, box_id: str, workspace: str | None, key_digest: str | None) -> PageGrant:
        self._forget_expired()
        while len(self._live) >= MAX_GRANTS:
            self._live.pop(next(iter(self._live)))
        value = GRANT_PREFIX + secrets.token_urlsafe(32)
        made = PageGrant(value, box_id, workspace, key_digest, self.clock() + self.secs * 1000)
        self._live[value] = made
        return made

    def check(self, given: str, method: str, path: str, box_id: str | None) -> PageGrant:
        """The grant `given` if it is live and allows `method` on the route `path` (its
        canonical pattern) for `box_id`; `BadCredential` otherwise, saying what a grant is
        for (a guess learns nothing: it is the same for every refusal)."""
        found = self._live.get(given)
        if found is not None and not hmac.compare_digest(found.grant, given):
            found = None
        allowed = found is not None and found.expires_at_ms > self.clock()
        if allowed and found is not None:
            if (method, path) == ("POST", FORK_PATH):
                allowed = box_id == found.box_id
            elif (method, path) == ("POST", TICKET_PATH):
                allowed = box_id in found.forks
            else:
                allowed = False
        if not allowed or found is None:
            raise BadCredential(
                "no valid grant of a trace page for this call (a page's grant forks its box "
                "and opens the forks' viewers, for 15 minutes): reload the trace page"
            )
        return found

    def forked(self, grant: PageGrant, box_ids: Iterable[str]) -> None:
        """The boxes a fork with `grant` made: their viewer tickets it may now ask for."""
        grant.forks.update(box_ids)

    def _forget_expired(self) -> None:
        now = self.clock()
        for value in [v for v, g in self._live.items() if g.expires_at_ms <= now]:
            del self._live[value]


# The app's live grants, made with the app (as its viewer tickets are), and the grant a
# request came with (set by the guards: the fork route notes the boxes it made).
PAGE_GRANTS = web.AppKey("page_grants", PageGrants)
GRANT_USED = web.RequestKey("page_grant", PageGrant)


__all__ = [
    "FORK_PATH",
    "GRANT_PREFIX",
    "GRANT_SECS",
    "GRANT_USED",
    "MAX_GRANTS",
    "PAGE_GRANTS",
    "TICKET_PATH",
    "GrantDenied",
    "PageGrant",
    "PageGrants",
]
