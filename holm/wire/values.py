"""Small value types that actions and their results share: points, rectangles, names."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

# back and forward: the side buttons of a mouse (X buttons 8 and 9), browsers' history keys.
Button = Literal["left", "right", "middle", "back", "forward"]
Modifier = Literal["shift", "ctrl", "alt", "super"]
Motion = Literal["instant", "smooth", "human"]
Selection = Literal["clipboard", "primary"]


class Point(msgspec.Struct, forbid_unknown_fields=True):
    x: int
    y: int


class Region(msgspec.Struct, forbid_unknown_fields=True):
    x: int
    y: int
    width: int
    height: int


# How a frame is encoded for its reader. A trace keeps PNG: its frames are named by the hash
# of their pixels, which only a lossless picture keeps.
ImageFormat = Literal["png", "jpeg", "webp"]
Quality = Annotated[int, Meta(ge=1, le=100, description="jpeg and webp only: 1 to 100")]
DEFAULT_QUALITY = 80


class Encoding(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    format: ImageFormat = "png"
    quality: Quality = DEFAULT_QUALITY


PNG = Encoding()


def encoding_of(format: ImageFormat, quality: int | None) -> Encoding:
    """The encoding a request names; `ValueError` (a 400 at decode) for a quality given with
    PNG, which is lossless and would silently ignore it."""
    if quality is None:
        return Encoding(format)
    if format == "png":
        raise ValueError("quality goes with format jpeg or webp (png is lossless)")
    return Encoding(format, quality)


__all__ = [
    "DEFAULT_QUALITY",
    "PNG",
    "Button",
    "Encoding",
    "ImageFormat",
    "Modifier",
    "Motion",
    "Point",
    "Quality",
    "Region",
    "Selection",
    "encoding_of",
]
