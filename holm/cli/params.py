"""Argument types of the commands: durations, points, and JSON files decoded into wire
types (a bad file is a `bad_request`, exit 3, that names the file)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, TypeVar

import click
import msgspec

from holm.errors import BadRequest
from holm.wire.values import Point

T = TypeVar("T")

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class Duration(click.ParamType[int]):
    """Seconds: `90`, `90s`, `15m`, `2h`, `1d`."""

    name = "duration"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        unit = _UNITS.get(text[-1:])
        number = text[:-1] if unit is not None else text
        if not number.isdigit():
            self.fail(f"{value!r} is not a duration such as 90, 90s, 15m, 2h or 1d", param, ctx)
        return int(number) * (unit or 1)


DURATION = Duration()


def point(coordinates: Sequence[int], what: str = "the point") -> Point | None:
    """`X Y` as a point, or none (at the pointer) when no coordinates are given."""
    if not coordinates:
        return None
    if len(coordinates) != 2:
        raise click.UsageError(f"{what} takes two numbers, X and Y")
    return Point(x=coordinates[0], y=coordinates[1])


def decode_file(stream: IO[bytes], type_: type[T]) -> T:
    try:
        return msgspec.json.decode(stream.read(), type=type_)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BadRequest(f"{source_name(stream)}: {exc}") from exc


def source_name(stream: IO[bytes]) -> str:
    """The file's name in messages; stdin (`-`) is `<stdin>`, as Python names it."""
    return str(getattr(stream, "name", "<stdin>"))


def convert(value: object, type_: type[T], source: str) -> T:
    try:
        return msgspec.convert(value, type_)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"{source}: {exc}") from exc


__all__ = ["DURATION", "Duration", "convert", "decode_file", "point", "source_name"]
