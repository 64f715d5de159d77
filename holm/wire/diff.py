"""How close two traces are, as `holm diff` and `GET /v1/boxes/{a}/diff/{b}` answer it
(holm/replay/diff.py computes it)."""

from __future__ import annotations

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

    def same(self, frame_tolerance: float = 0.0) -> bool:
        """Every step matched, and every last frame has the same pixels, or pixels at most
        `frame_tolerance` apart."""
        return (
            not self.missing
            and not self.extra
            and all(
                f.pixels_equal or (f.distance is not None and f.distance <= frame_tolerance)
                for f in self.frames
            )
        )


__all__ = ["FrameComparison", "MatchedStep", "StepRef", "TraceDiff"]
