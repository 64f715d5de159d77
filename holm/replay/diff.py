"""How close two traces are (a source and its fork, or any two runs): their steps aligned by
key in order, and their last frames compared pixel by pixel.

`diff_traces` works on any two traces given a way to read entries and frames, so the same
code serves `GET /v1/boxes/{a}/diff/{b}` (through the engine), `holm diff` against a
server (through the client) and `holm diff` on two JSONL files.
"""

from __future__ import annotations

import asyncio
import difflib
import io
from collections.abc import Awaitable, Callable, Sequence
from typing import NamedTuple

from msgspec.structs import replace
from PIL import Image, ImageChops, ImageStat

from holm.errors import NotFound
from holm.projections.trace_html import TraceSide, trace_pair_html
from holm.replay.boxes import Boxes
from holm.replay.divergence import first_parting
from holm.replay.plan import Step, plan_fork
from holm.replay.reading import read_whole_trace
from holm.wire.diff import FrameComparison, MatchedStep, StepRef, TraceDiff
from holm.wire.entries import BoxCreated, Entry, ForkedFrom, FrameSeen
from holm.wire.values import Region

ReadEntries = Callable[[str], Awaitable[Sequence[Entry]]]
ReadFrame = Callable[[str, str], Awaitable[bytes | None]]


def align_steps(
    a: Sequence[Step], b: Sequence[Step]
) -> tuple[list[MatchedStep], list[StepRef], list[StepRef]]:
    """Matched pairs, steps of A that B lacks (missing), steps of B that A lacks (extra);
    matched in order (a longest common subsequence of keys)."""
    keys_a = [s.key for s in a]
    keys_b = [s.key for s in b]
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    pairs: list[MatchedStep] = []
    seen_a: set[int] = set()
    seen_b: set[int] = set()
    for block in matcher.get_matching_blocks():
        for i in range(block.size):
            sa, sb = a[block.a + i], b[block.b + i]
            pairs.append(MatchedStep(a=sa.seq, b=sb.seq, key=sa.key))
            seen_a.add(block.a + i)
            seen_b.add(block.b + i)
    missing = [_ref(s) for i, s in enumerate(a) if i not in seen_a]
    extra = [_ref(s) for i, s in enumerate(b) if i not in seen_b]
    return pairs, missing, extra


def _ref(step: Step) -> StepRef:
    return StepRef(seq=step.seq, kind=step.kind, key=step.key)


def last_frames(entries: Sequence[Entry]) -> dict[int, FrameSeen]:
    """The last frame entry of each screen."""
    frames: dict[int, FrameSeen] = {}
    for entry in entries:
        if isinstance(entry, FrameSeen):
            frames[entry.screen] = entry
    return frames


def compare_pngs(png_a: bytes, png_b: bytes) -> tuple[float, Region | None]:
    """The perceptual distance of two pictures (0–1) and the box around what differs. Two
    sizes are as far apart as can be."""
    with Image.open(io.BytesIO(png_a)) as raw_a, Image.open(io.BytesIO(png_b)) as raw_b:
        image_a = raw_a.convert("RGB")
        image_b = raw_b.convert("RGB")
    if image_a.size != image_b.size:
        width = max(image_a.width, image_b.width)
        height = max(image_a.height, image_b.height)
        return 1.0, Region(x=0, y=0, width=width, height=height)
    difference = ImageChops.difference(image_a, image_b)
    box = difference.getbbox()
    if box is None:
        return 0.0, None
    distance = sum(ImageStat.Stat(difference).mean) / (3 * 255)
    left, top, right, bottom = box
    return distance, Region(x=left, y=top, width=right - left, height=bottom - top)


async def compare_frames(
    screen: int,
    a: tuple[str, FrameSeen | None],
    b: tuple[str, FrameSeen | None],
    read_frame: ReadFrame,
) -> FrameComparison:
    (trace_a, frame_a), (trace_b, frame_b) = a, b
    unknown = FrameComparison(
        screen=screen,
        a=frame_a.frame if frame_a else None,
        b=frame_b.frame if frame_b else None,
        pixels_equal=False,
    )
    if frame_a is None or frame_b is None:
        which = (
            trace_b if frame_a is not None else trace_a if frame_b is not None else "either trace"
        )
        return replace(unknown, note=f"no frame of screen {screen} in {which}")
    if frame_a.frame == frame_b.frame:
        # A frame's hash identifies its pixels: no need to decode anything.
        return replace(unknown, pixels_equal=True, distance=0.0)
    png_a, png_b = await asyncio.gather(
        read_frame(trace_a, frame_a.frame), read_frame(trace_b, frame_b.frame)
    )
    if png_a is None or png_b is None:
        gone = trace_a if png_a is None else trace_b
        return replace(unknown, note=f"the last frame of {gone} is no longer kept")
    distance, changed = await asyncio.to_thread(compare_pngs, png_a, png_b)
    return replace(unknown, pixels_equal=changed is None, distance=distance, changed=changed)


def fork_up_to(entries_b: Sequence[Entry], a: str) -> int | None:
    """The `up_to` of B's `forked_from` when B is a fork of A."""
    forked = forked_from(entries_b, a)
    return None if forked is None else forked.up_to


def forked_from(entries_b: Sequence[Entry], a: str) -> ForkedFrom | None:
    """B's `forked_from` when it names A."""
    for entry in entries_b:
        if isinstance(entry, ForkedFrom) and entry.source == a:
            return entry
    return None


def _known_as(a: str, entries_a: Sequence[Entry]) -> str:
    """The name a fork's `forked_from` gives trace `a`: the box its trace created, when it
    has its start (a trace file's name, a path, is not it)."""
    created = next((e for e in entries_a if isinstance(e, BoxCreated)), None)
    return a if created is None else created.box_id


class Alignment(NamedTuple):
    """Two traces' steps aligned: B forked from A up to `a_up_to` (None: B is no fork of
    A), the matched pairs, A's steps B lacks and B's steps A lacks."""

    a_up_to: int | None
    pairs: list[MatchedStep]
    missing: list[StepRef]
    extra: list[StepRef]


def align_traces(a: str, entries_a: Sequence[Entry], entries_b: Sequence[Entry]) -> Alignment:
    """The steps of trace `a` (up to where B was forked from it, when B names `a` as its
    source) and of B, aligned: what `holm diff` and the side-by-side trace page show.
    A is known by the box its trace created, when it has its start: a trace file's name
    (a path) is not what a fork's `forked_from` names."""
    up_to = fork_up_to(entries_b, _known_as(a, entries_a))
    pairs, missing, extra = align_steps(
        plan_fork(entries_a, up_to=up_to).steps, plan_fork(entries_b).steps
    )
    return Alignment(up_to, pairs, missing, extra)


async def side_by_side(a: TraceSide, b: TraceSide) -> str:
    """The trace page of A (named as B's `forked_from` names its source, for a fork) and B
    side by side, their steps aligned as `holm diff` aligns them, and the step where they
    first part marked."""
    aligned = align_traces(a.name, a.entries, b.entries)
    sides = {"a": a, "b": b}

    async def read_frame(side: str, frame_hash: str) -> bytes | None:
        return sides[side].frame_png(frame_hash)

    parting = await first_parting(
        ("a", a.entries),
        ("b", b.entries),
        read_frame,
        a_up_to=aligned.a_up_to,
        fork=forked_from(b.entries, _known_as(a.name, a.entries)) is not None,
    )
    return trace_pair_html(
        f"{b.name} beside {a.name}",
        a,
        b,
        aligned.pairs,
        aligned.missing,
        aligned.extra,
        a_up_to=aligned.a_up_to,
        parting=parting,
    )


async def diff_traces(
    a: str,
    b: str,
    read_entries: ReadEntries,
    read_frame: ReadFrame,
    *,
    frame_tolerance: float = 0.0,
) -> TraceDiff:
    """The two traces aligned, their last frames compared, and where they first part (a
    screen parts only beyond `frame_tolerance`)."""
    entries_a, entries_b = await asyncio.gather(read_entries(a), read_entries(b))
    up_to, pairs, missing, extra = align_traces(a, entries_a, entries_b)
    parting = await first_parting(
        (a, entries_a),
        (b, entries_b),
        read_frame,
        a_up_to=up_to,
        fork=forked_from(entries_b, _known_as(a, entries_a)) is not None,
        frame_tolerance=frame_tolerance,
    )
    frames_a, frames_b = last_frames(entries_a), last_frames(entries_b)
    screens = sorted(set(frames_a) | set(frames_b)) or [0]
    frames = [
        await compare_frames(
            screen, (a, frames_a.get(screen)), (b, frames_b.get(screen)), read_frame
        )
        for screen in screens
    ]
    return TraceDiff(
        a=a,
        b=b,
        a_up_to=up_to,
        matched=len(pairs),
        missing=missing,
        extra=extra,
        pairs=pairs,
        frames=frames,
        divergence=parting,
    )


async def diff_boxes(boxes: Boxes, a: str, b: str, *, frame_tolerance: float = 0.0) -> TraceDiff:
    """The diff of two boxes' traces (removed boxes too) as the server keeps them: what
    `GET /v1/boxes/{a}/diff/{b}` answers. NotFound when either has no trace."""

    async def read_entries(box_id: str) -> list[Entry]:
        return await read_whole_trace(boxes, box_id)

    async def read_frame(box_id: str, frame_hash: str) -> bytes | None:
        try:
            return await boxes.trace_frame(box_id, frame_hash)
        except NotFound:
            return None

    return await diff_traces(a, b, read_entries, read_frame, frame_tolerance=frame_tolerance)


__all__ = [
    "Alignment",
    "FrameComparison",
    "MatchedStep",
    "ReadEntries",
    "ReadFrame",
    "StepRef",
    "TraceDiff",
    "align_steps",
    "align_traces",
    "compare_pngs",
    "diff_boxes",
    "diff_traces",
    "last_frames",
    "side_by_side",
]
