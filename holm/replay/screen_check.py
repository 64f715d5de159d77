"""How a strict replay checks the screen after a step: it waits until the screen shows the
frame the source recorded there, or, once the screen has stayed on another picture for the
policy's settle time, until that picture is within the policy's tolerance of the recorded
one (which needs the recorded PNG: `reference`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from holm.replay.boxes import Boxes
from holm.replay.diff import compare_pngs
from holm.replay.plan import ExpectedFrame
from holm.replay.strict import Divergence, ReplayPolicy

# How often the screen is looked at while waiting.
POLL_SECS = 0.05

# The recorded PNG of a frame hash, None when it is not kept.
Reference = Callable[[str], Awaitable[bytes | None]]


async def meet_frame(
    boxes: Boxes,
    box_id: str,
    seq: int,
    expected: ExpectedFrame,
    policy: ReplayPolicy,
    reference: Reference | None,
) -> Divergence | None:
    """None when the screen reaches the expected frame in the policy's time; else the
    divergence, with the hash (and distance, when measured) of what it showed."""
    give_up = time.monotonic() + policy.frame_within_ms / 1000
    settle = getattr(policy, "settled_ms", 0) / 1000
    seen: str | None = None
    seen_since = time.monotonic()
    distance: float | None = None
    while True:
        frame = await boxes.frame(box_id, expected.screen, have=expected.hash)
        if frame.unchanged or frame.hash == expected.hash:
            return None
        now = time.monotonic()
        if frame.hash != seen:
            seen, seen_since, distance = frame.hash, now, None
        elif distance is None and now - seen_since >= settle and reference is not None:
            distance = await _distance(boxes, box_id, expected, reference)
            if distance is not None and distance <= policy.frame_tolerance:
                return None
        if now >= give_up:
            actual: dict[str, object] = {"screen": expected.screen, "hash": frame.hash}
            if distance is not None:
                actual["distance"] = distance
            return Divergence(
                seq=seq,
                what="frame",
                expected={"screen": expected.screen, "hash": expected.hash, "seq": expected.seq},
                actual=actual,
            )
        await asyncio.sleep(POLL_SECS)


async def _distance(
    boxes: Boxes, box_id: str, expected: ExpectedFrame, reference: Reference
) -> float | None:
    recorded = await reference(expected.hash)
    if recorded is None:
        return None
    now = await boxes.frame(box_id, expected.screen)
    if now.png is None:
        return None
    distance, _ = await asyncio.to_thread(compare_pngs, recorded, now.png)
    return distance


__all__ = ["Reference", "meet_frame"]
