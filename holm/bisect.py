"""Bisect a run: the first step of a box's trace after which a predicate holds (a text on
the page or in a window title, a page URL, a frame, a command that exits 0), found by
forking prefixes of the trace (`up_to`) in a binary search, and evaluating the predicate on
each fork (docs/fork.md).

It is a client of any holmd (holm/client.py): it reads the trace, forks, asks, and removes
the forks it made unless told to keep them. With n steps it forks at most
ceil(log2 n) + 1 times: once with every step (does the predicate hold at all?), then one
fork per halving. It assumes the predicate, once it holds, holds after every later step;
the report lists every probe, so a run where it does not can be seen.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from typing import Literal

import msgspec

from holm.client import SyncHolmClient
from holm.errors import HolmError
from holm.replay.plan import plan_fork
from holm.wire.api import BoxView, ReplayReport
from holm.wire.entries import Entry

# How often a probe asks again while it waits for its predicate, and how long by default.
POLL_SECS = 0.25
WAIT_MS = 1000
# How long a queued fork may take to start.
START_SECS = 300.0

PredicateKind = Literal["text", "url", "frame", "exit"]


class Predicate(msgspec.Struct, kw_only=True):
    """What must hold: `text` in the page's text or a window's title, `url` a regular
    expression the page's URL matches, `frame` the screen's frame hash, `exit` a shell
    command run in the box that exits 0."""

    kind: PredicateKind
    value: str
    screen: int = 0

    def describe(self) -> str:
        return {
            "text": f"the text {self.value!r} is on the page or in a window title",
            "url": f"the page's URL matches {self.value!r}",
            "frame": f"screen {self.screen} shows frame {self.value}",
            "exit": f"`{self.value}` exits 0 in the box",
        }[self.kind]


class Probe(msgspec.Struct, kw_only=True):
    """One fork: the step it replayed up to (1-based, and its seq), the fork's box, whether
    the predicate held on it, and what its replay did."""

    step: int
    up_to: int
    box: str
    holds: bool
    replay: ReplayReport
    removed: bool = False


class BisectReport(msgspec.Struct, kw_only=True):
    """`step` is the first step (1-based, of `steps`) after which the predicate holds and
    `seq` its seq in the trace; both None when it does not hold after the last step."""

    box: str
    predicate: str
    steps: int
    step: int | None
    seq: int | None
    forks: int
    probes: list[Probe]
    kept: bool
    seconds: float


def bisect(
    client: SyncHolmClient,
    box_id: str,
    predicate: Predicate,
    *,
    keep: bool = False,
    wait_ms: int = WAIT_MS,
    on_probe: Callable[[Probe], None] | None = None,
) -> BisectReport:
    """The first step of `box_id`'s trace after which `predicate` holds, by forks of its
    prefixes; each fork removed when its probe is done, unless `keep`."""
    began = time.monotonic()
    # The steps a fork does again, each a place to stop at (`up_to`): the plan is pure.
    seqs = [step.seq for step in plan_fork(_whole_trace(client, box_id)).steps]
    probes: list[Probe] = []

    def holds_after(step: int) -> bool:
        probe = _probe(client, box_id, step, seqs[step - 1], predicate, wait_ms, keep)
        probes.append(probe)
        if on_probe is not None:
            on_probe(probe)
        return probe.holds

    found: int | None = None
    if seqs and holds_after(len(seqs)):
        low, high = 1, len(seqs)
        while low < high:
            middle = (low + high) // 2
            if holds_after(middle):
                high = middle
            else:
                low = middle + 1
        found = low
    return BisectReport(
        box=box_id,
        predicate=predicate.describe(),
        steps=len(seqs),
        step=found,
        seq=None if found is None else seqs[found - 1],
        forks=len(probes),
        probes=probes,
        kept=keep,
        seconds=time.monotonic() - began,
    )


def _whole_trace(client: SyncHolmClient, box_id: str) -> list[Entry]:
    entries: list[Entry] = []
    after: int | None = None
    while True:
        page = client.trace(box_id, after=after)
        entries.extend(page.entries)
        if not page.more or not page.entries:
            return entries
        after = page.next


def _probe(
    client: SyncHolmClient,
    source: str,
    step: int,
    up_to: int,
    predicate: Predicate,
    wait_ms: int,
    keep: bool,
) -> Probe:
    forked = client.fork(source, up_to=up_to)
    box = _started(client, forked.box)
    try:
        holds = box.state == "ready" and _holds_within(client, box.id, predicate, wait_ms)
    finally:
        removed = False
        if not keep:
            with contextlib.suppress(HolmError):
                client.delete_box(box.id)
                removed = True
    return Probe(
        step=step, up_to=up_to, box=box.id, holds=holds, replay=forked.replay, removed=removed
    )


def _started(client: SyncHolmClient, box: BoxView) -> BoxView:
    """The fork once it is up (a server that queues its jobs answers it `starting`)."""
    deadline = time.monotonic() + START_SECS
    while box.state == "starting" and time.monotonic() < deadline:
        time.sleep(POLL_SECS)
        box = client.get_box(box.id)
    return box


def _holds_within(client: SyncHolmClient, box_id: str, predicate: Predicate, wait_ms: int) -> bool:
    """Whether the predicate holds now, or comes to within `wait_ms` (a page still loading
    when the replay ended)."""
    deadline = time.monotonic() + wait_ms / 1000
    while True:
        if _holds(client, box_id, predicate):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECS)


def _holds(client: SyncHolmClient, box_id: str, predicate: Predicate) -> bool:
    match predicate.kind:
        case "text":
            titles = [w.title for w in client.windows(box_id, screen=predicate.screen)]
            if any(predicate.value in title for title in titles):
                return True
            return predicate.value in _page(client, box_id, "text")
        case "url":
            return re.search(predicate.value, _page(client, box_id, "url")) is not None
        case "frame":
            return client.frame(box_id, screen=predicate.screen).hash == predicate.value
        case "exit":
            ran = client.exec(box_id, ["sh", "-c", predicate.value])
            return ran.code == 0 and not ran.timed_out


def _page(client: SyncHolmClient, box_id: str, part: Literal["text", "url"]) -> str:
    """The page's text or URL; nothing when the box has no page to read (no browser)."""
    try:
        page = client.read_page(box_id, format="text")
    except HolmError:
        return ""
    return page.text if part == "text" else page.url


__all__ = ["BisectReport", "Predicate", "PredicateKind", "Probe", "bisect"]
