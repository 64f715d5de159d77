"""How close two traces are, as `holm diff` and `GET /v1/boxes/{a}/diff/{b}` answer it
(holm/replay/diff.py computes it)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from holm.wire.values import Region


class StepRef(msgspec.Struct, kw_only=True):
    seq: int
    kind: str
    key: str


class MatchedStep(msgspec.Struct, kw_only=True):
    a: int
    b: int
    key: str


class FrameComparison(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The last frame of one screen in each trace. `distance` is the mean absolute difference
    over every pixel and channel, 0 (equal) to 1; `changed` the bounding box of the pixels
    that differ. `note` says why pixels could not be compared (no frame, frame pruned)."""

    screen: int
    a: str | None
    b: str | None
    pixels_equal: bool
    distance: float | None = None
    changed: Region | None = None
    note: str | None = None


PartingKind = Literal["failed", "missing", "extra", "screen", "page"]


class PageSeen(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The page a page step left, as its `acted` entry keeps it (URL without its query)."""

    url: str = ""
    title: str | None = None


class ScreenSeen(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One side of a screen that differs: its frame after the step, and a crop of it around
    what differs (a PNG, base64), at `crop` in the frame's pixels."""

    frame: str
    crop_png_base64: str | None = None


class Parting(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Where two runs first part, walking their aligned steps in order: the step (its seq
    in A and in B; one is None for a step `missing` from B or `extra` in B), what differs
    (`kind`), and the evidence: each side's outcome (`failed`: refused, or a command that
    failed, in one and not the other), the page each left (`page`: URL or title), or the
    screen after it (`screen`: distance, the rectangle that differs, a crop of each
    frame)."""

    kind: PartingKind
    a: int | None
    b: int | None
    key: str
    step: str
    message: str
    a_outcome: Any = None
    b_outcome: Any = None
    screen: int | None = None
    distance: float | None = None
    changed: Region | None = None
    crop: Region | None = None
    a_screen: ScreenSeen | None = None
    b_screen: ScreenSeen | None = None
    a_page: PageSeen | None = None
    b_page: PageSeen | None = None


class TraceDiff(msgspec.Struct, kw_only=True):
    a: str
    b: str
    # B is a fork of A up to this seq: A's steps after it are not counted as missing.
    a_up_to: int | None
    matched: int
    missing: list[StepRef]
    extra: list[StepRef]
    pairs: list[MatchedStep]
    frames: list[FrameComparison]
    # Beyond the first version of this answer: where the runs first part, or None.
    divergence: Parting | None = None

    def same(self, frame_tolerance: float = 0.0) -> bool:
        """Every step matched with the same outcome and page, and every last frame has the
        same pixels, or pixels at most `frame_tolerance` apart. A screen that parted after a
        step midway is reported (`divergence`) but does not count here: a frame midway is
        the watcher's look at a moment, which a blinking caret or an animation can make
        differ between two runs that did the same (the recorded browser_form run's did)."""
        parted = self.divergence
        return (
            not self.missing
            and not self.extra
            and (parted is None or parted.kind == "screen")
            and all(
                f.pixels_equal or (f.distance is not None and f.distance <= frame_tolerance)
                for f in self.frames
            )
        )


__all__ = [
    "FrameComparison",
    "MatchedStep",
    "PageSeen",
    "Parting",
    "PartingKind",
    "ScreenSeen",
    "StepRef",
    "TraceDiff",
]
