"""Where two runs first part: their steps aligned by key (the key strict replay matches a
recorded step by), walked in order, and the first step that went otherwise reported with
its evidence (docs/fork.md):

- `failed`: a matched step refused in one run and not the other, or a command that
  succeeded (exit 0, in time) in one and not the other;
- `missing` / `extra`: a step of A that B lacks, or one of B that A lacks (where B did
  another step instead, both seqs are given);
- `page`: a matched page step left another URL (without its query) or title;
- `screen`: the screen after a matched step, as each trace last recorded it before its
  next step, has other pixels: the distance, the rectangle that differs, and a crop of
  both frames around it.

A screen is compared only after a step that ends its batch and can change the screen, and
only when that frame stayed `SETTLED_MS` on both sides before the next step (or the trace
ended): a shorter-lived frame may be a picture half drawn, as strict replay holds too.
When B is a fork of A, A's steps a fork does not do again (refused ones, writes whose bytes
are not kept) are left out: that B lacks them is no parting.
"""

from __future__ import annotations

import asyncio
import base64
import difflib
import io
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgspec
from msgspec.structs import replace
from PIL import Image

from holm.projections.text import action_text
from holm.replay.loose import RecordedCall, steps_of_trace
from holm.replay.plan import OFF_SCREEN, SETTLED_MS, why_skipped
from holm.wire import actions as act
from holm.wire.api import Outcome
from holm.wire.diff import PageSeen, Parting, ScreenSeen
from holm.wire.entries import Acted, Adopted, Entry, FrameSeen
from holm.wire.values import Region

# The PNG of a frame of trace `trace`, or None when it is not kept.
FramePng = Callable[[str, str], Awaitable[bytes | None]]
# Pixels of the frame kept around the rectangle that differs, on each side, and the largest
# crop (a whole screen of differences is cut to its top left corner).
CROP_MARGIN = 24
CROP_MAX = 480


class _Side(msgspec.Struct, kw_only=True):
    """One run: its name (to read its frames), its entries (by seq too), the steps compared
    and the seqs of every step of the trace (past an `up_to` too)."""

    name: str
    entries: Sequence[Entry]
    by_seq: dict[int, Entry]
    steps: list[RecordedCall]
    step_seqs: list[int]


async def first_parting(
    a: tuple[str, Sequence[Entry]],
    b: tuple[str, Sequence[Entry]],
    read_frame: FramePng,
    *,
    a_up_to: int | None = None,
    fork: bool = False,
    frame_tolerance: float = 0.0,
) -> Parting | None:
    """The first step at which run B parts from run A (A up to `a_up_to`; `fork`: B is a
    fork of A), or None when every step went the same way."""
    side_a = _side(a[0], a[1], up_to=a_up_to, fork=fork)
    side_b = _side(b[0], b[1])
    keys_a = [s.key for s in side_a.steps]
    keys_b = [s.key for s in side_b.steps]
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op != "equal":
            return _unmatched(side_a.steps, side_b.steps, a0, a1, b0, b1)
        for i, j in zip(range(a0, a1), range(b0, b1), strict=True):
            parting = await _pair(side_a, side_b, i, j, read_frame, frame_tolerance)
            if parting is not None:
                return parting
    return None


def _side(
    name: str, entries: Sequence[Entry], *, up_to: int | None = None, fork: bool = False
) -> _Side:
    last_adopted = max((n for n, e in enumerate(entries) if isinstance(e, Adopted)), default=-1)
    live = list(entries[last_adopted + 1 :])
    by_seq = {e.seq: e for e in live}
    every = steps_of_trace(live)
    steps = [
        step
        for step in every
        if (up_to is None or step.seq <= up_to)
        and not (fork and _not_forked(by_seq[step.seq], step.outcome))
    ]
    return _Side(
        name=name, entries=live, by_seq=by_seq, steps=steps, step_seqs=[s.seq for s in every]
    )


def _not_forked(entry: Entry, outcome: Outcome) -> bool:
    """A step a fork never does again: a refused one, or one whose bytes are not kept."""
    return not outcome.ok or why_skipped(entry) is not None


def _unmatched(
    a: list[RecordedCall], b: list[RecordedCall], a0: int, a1: int, b0: int, b1: int
) -> Parting:
    if a0 < a1:
        step = a[a0]
        instead = b[b0] if b0 < b1 else None
        also = "" if instead is None else f"; B did {_what(instead)} (seq {instead.seq}) instead"
        return Parting(
            kind="missing",
            a=step.seq,
            b=None if instead is None else instead.seq,
            key=step.key,
            step=_what(step),
            message=f"A's step seq {step.seq} ({_what(step)}) is not in B{also}",
        )
    step = b[b0]
    return Parting(
        kind="extra",
        a=None,
        b=step.seq,
        key=step.key,
        step=_what(step),
        message=f"B's step seq {step.seq} ({_what(step)}) is not in A",
    )


async def _pair(
    a: _Side, b: _Side, i: int, j: int, read_frame: FramePng, frame_tolerance: float
) -> Parting | None:
    step_a, step_b = a.steps[i], b.steps[j]
    ok_a, ok_b = _succeeded(step_a.outcome), _succeeded(step_b.outcome)
    base = Parting(
        kind="failed", a=step_a.seq, b=step_b.seq, key=step_a.key, step=_what(step_a), message=""
    )
    if ok_a != ok_b:
        which = "A" if not ok_a else "B"
        return replace(
            base,
            message=f"{_what(step_a)} failed in {which} only (A seq {step_a.seq}, "
            f"B seq {step_b.seq})",
            a_outcome=_outcome(step_a.outcome),
            b_outcome=_outcome(step_b.outcome),
        )
    page_a, page_b = _page(a, step_a), _page(b, step_b)
    if page_a is not None and page_b is not None and not _same_page(page_a, page_b):
        return replace(
            base,
            kind="page",
            message=f"after {_what(step_a)}, A's page is {_page_text(page_a)} and B's "
            f"{_page_text(page_b)}",
            a_page=page_a,
            b_page=page_b,
        )
    return await _screens(a, b, i, j, read_frame, frame_tolerance, base)


def _succeeded(outcome: Outcome) -> bool:
    return outcome.ok and (outcome.exec is None or outcome.exec.succeeded)


def _outcome(outcome: Outcome) -> Any:
    return msgspec.to_builtins(outcome)


def _page(side: _Side, step: RecordedCall) -> PageSeen | None:
    entry = side.by_seq.get(step.seq)
    if not isinstance(entry, Acted) or not isinstance(entry.result, dict):
        return None
    page = entry.result.get("page")
    if not isinstance(page, dict):
        return None
    try:
        return msgspec.convert(page, PageSeen)
    except msgspec.ValidationError:
        return None


def _same_page(a: PageSeen, b: PageSeen) -> bool:
    # An element step keeps no title: only what both kept is compared.
    return a.url == b.url and (a.title is None or b.title is None or a.title == b.title)


def _page_text(page: PageSeen) -> str:
    return page.url + ("" if page.title is None else f" ({page.title!r})")


async def _screens(
    a: _Side,
    b: _Side,
    i: int,
    j: int,
    read_frame: FramePng,
    frame_tolerance: float,
    base: Parting,
) -> Parting | None:
    step = a.steps[i]
    if not _can_change_screen(step.action) or not (_ends_batch(a, i) and _ends_batch(b, j)):
        return None
    frame_a, frame_b = _screen_after(a, i), _screen_after(b, j)
    if frame_a is None or frame_b is None or frame_a.frame == frame_b.frame:
        # Equal hashes are equal pixels; a screen not recorded, or not settled, is not
        # compared.
        return None
    png_a, png_b = await asyncio.gather(
        read_frame(a.name, frame_a.frame), read_frame(b.name, frame_b.frame)
    )
    if png_a is None or png_b is None:
        return None
    compared = await asyncio.to_thread(_compare_and_crop, png_a, png_b)
    if compared is None:
        return None
    distance, changed, crop, crop_a, crop_b = compared
    if distance <= frame_tolerance:
        return None
    return replace(
        base,
        kind="screen",
        message=f"after {_what(step)}, screen {frame_a.screen} differs: distance "
        f"{distance:.6f}, {changed.width}x{changed.height} at {changed.x},{changed.y}",
        screen=frame_a.screen,
        distance=distance,
        changed=changed,
        crop=crop,
        a_screen=ScreenSeen(frame=frame_a.frame, crop_png_base64=crop_a),
        b_screen=ScreenSeen(frame=frame_b.frame, crop_png_base64=crop_b),
    )


def _can_change_screen(action: act.Action) -> bool:
    match action:
        case act.OnNode(what=what):
            return not isinstance(what, act.NODE_READS)
        case act.Launch():
            return True
        case _:
            return not isinstance(action, OFF_SCREEN)


def _ends_batch(side: _Side, n: int) -> bool:
    batch = _batch_of(side, side.steps[n])
    if batch is None or n + 1 >= len(side.steps):
        return True
    return _batch_of(side, side.steps[n + 1]) != batch


def _batch_of(side: _Side, step: RecordedCall) -> str | None:
    entry = side.by_seq.get(step.seq)
    return entry.batch if isinstance(entry, Acted) else None


def _screen_after(side: _Side, n: int) -> FrameSeen | None:
    """The screen as the trace last recorded it before the next step (of the whole trace,
    past an `up_to`), when it stayed so at least SETTLED_MS, or until the trace ended."""
    step = side.steps[n]
    end_seq = next((seq for seq in side.step_seqs if seq > step.seq), None)
    last: FrameSeen | None = None
    for entry in side.entries:
        if end_seq is not None and entry.seq >= end_seq:
            break
        if isinstance(entry, FrameSeen) and entry.screen == step.screen:
            last = entry
    if last is None or end_seq is None:
        return last
    held = side.by_seq[end_seq].at_ms - last.at_ms
    return last if held >= SETTLED_MS else None


def _compare_and_crop(png_a: bytes, png_b: bytes) -> tuple[float, Region, Region, str, str] | None:
    """The distance, the rectangle that differs, the crop around it, and each frame's crop
    as base64 PNG; None when the pixels are the same (two hashes of one picture)."""
    from holm.replay.diff import compare_pngs

    distance, changed = compare_pngs(png_a, png_b)
    if changed is None:
        return None
    with Image.open(io.BytesIO(png_a)) as image_a, Image.open(io.BytesIO(png_b)) as image_b:
        width = min(image_a.width, image_b.width)
        height = min(image_a.height, image_b.height)
        left = max(0, changed.x - CROP_MARGIN)
        top = max(0, changed.y - CROP_MARGIN)
        right = min(width, changed.x + changed.width + CROP_MARGIN, left + CROP_MAX)
        bottom = min(height, changed.y + changed.height + CROP_MARGIN, top + CROP_MAX)
        box = (left, top, right, bottom)
        crop = Region(x=left, y=top, width=right - left, height=bottom - top)
        return distance, changed, crop, _png64(image_a.crop(box)), _png64(image_b.crop(box))


def _png64(image: Image.Image) -> str:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def _what(step: RecordedCall) -> str:
    # As the text view writes a step (a command's secret by its name).
    return action_text(step.action)


__all__ = ["CROP_MARGIN", "CROP_MAX", "FramePng", "first_parting"]
