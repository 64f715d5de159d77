"""Small value types that actions and their results share: points, rectangles, names."""

from __future__ import annotations

from typing import Literal

import msgspec

Button = Literal["left", "right", "middle"]
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


__all__ = ["Button", "Modifier", "Motion", "Point", "Region", "Selection"]
