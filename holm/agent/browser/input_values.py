"""The values a browser accepts in the inputs typed text cannot fill (date, time,
datetime-local, month, week, color, range): `fill` sets their `value` in the format the
HTML standard names, and this turns the text a user gives into it, or says why it is none
(`BadRequest`: "not a date: …"). A browser takes no other value in them: set one, and the
field is left empty, which is how a `fill` of a date used to answer `ok` and do nothing."""

from __future__ import annotations

import datetime
import re

from holm.errors import BadRequest

# The input types whose value `fill` sets (all others take typed text).
SET_TYPES = frozenset({"date", "time", "datetime-local", "month", "week", "color", "range"})

_DATE_FORMS = ("%Y-%m-%d", "%Y/%m/%d", "%m/%d/%Y")
_TIME = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?\s*([ap]\.?m\.?)?", re.I)
_MONTH = re.compile(r"(\d{4})-(\d{1,2})")
_WEEK = re.compile(r"(\d{4})-?W(\d{1,2})", re.I)
_COLOR = re.compile(r"#?([0-9a-f]{6}|[0-9a-f]{3})", re.I)


def value_for(kind: str, text: str) -> str:
    """`text` as the `value` an `<input type=kind>` takes; `BadRequest` when it is none."""
    given = text.strip()
    match kind:
        case "date":
            return _date(given).isoformat()
        case "time":
            return _time(given)
        case "datetime-local":
            day, _, clock = given.replace("T", " ", 1).partition(" ")
            if not clock:
                raise BadRequest(f"not a date and time (YYYY-MM-DDTHH:MM): {text!r}")
            return f"{_date(day).isoformat()}T{_time(clock.strip())}"
        case "month":
            found = _MONTH.fullmatch(given)
            if found is None or not 1 <= int(found.group(2)) <= 12:
                raise BadRequest(f"not a month (YYYY-MM): {text!r}")
            return f"{found.group(1)}-{int(found.group(2)):02d}"
        case "week":
            found = _WEEK.fullmatch(given)
            if found is None:
                raise BadRequest(f"not a week (YYYY-Www): {text!r}")
            year, week = int(found.group(1)), int(found.group(2))
            # The last ISO week of a year is the week of its 28 December.
            if not 1 <= week <= datetime.date(year, 12, 28).isocalendar().week:
                raise BadRequest(f"not a week of {year}: {text!r}")
            return f"{year}-W{week:02d}"
        case "color":
            found = _COLOR.fullmatch(given)
            if found is None:
                raise BadRequest(f"not a colour (#rrggbb): {text!r}")
            digits = found.group(1).lower()
            return "#" + (digits if len(digits) == 6 else "".join(c * 2 for c in digits))
        case "range":
            try:
                number = float(given)
            except ValueError:
                raise BadRequest(f"not a number: {text!r}") from None
            if number != number or number in (float("inf"), float("-inf")):
                raise BadRequest(f"not a number: {text!r}")
            return given
    raise BadRequest(f"an input of type {kind} takes typed text")


def _date(given: str) -> datetime.date:
    for form in _DATE_FORMS:
        try:
            return datetime.datetime.strptime(given, form).date()
        except ValueError:
            continue
    raise BadRequest(f"not a date (YYYY-MM-DD, or MM/DD/YYYY): {given!r}")


def _time(given: str) -> str:
    found = _TIME.fullmatch(given)
    if found is None:
        raise BadRequest(f"not a time (HH:MM, HH:MM:SS): {given!r}")
    hour, minute = int(found.group(1)), int(found.group(2))
    seconds, millis, noon = found.group(3), found.group(4), found.group(5)
    if noon is not None:
        if not 1 <= hour <= 12:
            raise BadRequest(f"not a time: {given!r}")
        hour = hour % 12 + (12 if noon.lower().startswith("p") else 0)
    if hour > 23 or minute > 59 or (seconds is not None and int(seconds) > 59):
        raise BadRequest(f"not a time: {given!r}")
    value = f"{hour:02d}:{minute:02d}"
    if seconds is not None:
        value += f":{int(seconds):02d}"
        if millis is not None:
            value += "." + millis.ljust(3, "0")
    return value
