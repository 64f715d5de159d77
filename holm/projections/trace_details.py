"""What the trace page shows of a chosen step beside its frame: the action drawn on the
frame (a click's ring, a drag's line, a scroll's arrow) in the frame's pixels, a caption of
what was typed or pressed, and a command's exit code and output.

A step whose action names no point (a click "where the pointer is") is drawn at the point
the trace last moved the pointer to on that screen, when it knows one."""

from __future__ import annotations

import json
from typing import Any

from holm.projections.text import action_text
from holm.wire import actions as a
from holm.wire.entries import Acted, Entry, Executed
from holm.wire.values import Point

# Each of stdout and stderr is shown up to this many characters; the page says how many
# more there were.
MAX_OUTPUT_CHARS = 4000
# A typed text's caption is clipped here (the row's text is clipped at 60).
MAX_TYPED_CHARS = 1000

Detail = dict[str, Any]


class PointerTrail:
    """Where each screen's pointer was last sent, step by step; and the detail of each
    entry (None when the page has nothing to show of it but its frame)."""

    def __init__(self) -> None:
        self._at: dict[int, Point] = {}

    def detail(self, entry: Entry) -> Detail | None:
        match entry:
            case Acted(screen=screen, action=action, ok=ok, result=result):
                detail: Detail = {"say": _caption(action)}
                mark = _mark(action, self._at.get(screen))
                if mark is not None:
                    detail["mark"] = mark
                if isinstance(action, a.Exec) and isinstance(result, dict):
                    detail["exec"] = _output(
                        result.get("code"),
                        result.get("stdout", ""),
                        result.get("stderr", ""),
                        result.get("timed_out") is True,
                        result.get("truncated") is True,
                    )
                end = _pointer_after(action)
                if ok and end is not None:
                    self._at[screen] = end
                return detail
            case Executed(code=code, stdout=stdout, stderr=stderr, timed_out=timed_out):
                return {"exec": _output(code, stdout, stderr, timed_out, entry.truncated)}
            case _:
                return None


def _caption(action: a.Action) -> str:
    if isinstance(action, a.Type) and action.secret is not None:
        return f"type secret {action.secret}"
    if isinstance(action, a.Type) and not action.text:
        # A person's text, kept sealed or not at all (docs/trace.md).
        return "type •••"
    if isinstance(action, a.Type):
        typed = json.dumps(action.text, ensure_ascii=False)
        if len(typed) > MAX_TYPED_CHARS:
            typed = typed[: MAX_TYPED_CHARS - 1] + "…"
        return f"type {typed}"
    return action_text(action)


def _xy(point: Point) -> list[int]:
    return [point.x, point.y]


def _mark(action: a.Action, pointer: Point | None) -> Detail | None:
    """The shape drawn on the frame, in its pixels: `ring` [x, y], `line` [[x, y], …] (from
    where it began to where it ended), `scroll` [x, y, dx, dy]."""
    match action:
        case a.Click(at=at) | a.DoubleClick(at=at) | a.MouseDown(at=at) | a.MouseUp(at=at):
            where = at or pointer
            return None if where is None else {"ring": _xy(where)}
        case a.Move(to=to) | a.Drag(from_=None, to=to):
            return {"ring": _xy(to)} if pointer is None else {"line": [_xy(pointer), _xy(to)]}
        case a.Drag(from_=Point() as start, to=to):
            return {"line": [_xy(start), _xy(to)]}
        case a.Path(through=through):
            return {"line": [_xy(p) for p in through]}
        case a.Scroll(at=at, dx=dx, dy=dy, dx_px=px, dy_px=py):
            where = at or pointer
            # A scroll in pixels is drawn as one notch's arrow its way.
            dx, dy = dx or (px > 0) - (px < 0), dy or (py > 0) - (py < 0)
            return None if where is None else {"scroll": [where.x, where.y, dx, dy]}
        case _:
            return None


def _pointer_after(action: a.Action) -> Point | None:
    match action:
        case a.Click(at=at) | a.DoubleClick(at=at) | a.MouseDown(at=at) | a.MouseUp(at=at):
            return at
        case a.Move(to=to) | a.Drag(to=to):
            return to
        case a.Path(through=through):
            return through[-1]
        case a.Scroll(at=at):
            return at
        case _:
            return None


def _output(
    code: object, stdout: object, stderr: object, timed_out: bool, truncated: bool
) -> Detail:
    """A command's outcome as the page shows it: each stream clipped, and notes saying so."""
    notes: list[str] = []
    streams: dict[str, str] = {}
    for name, value in (("stdout", stdout), ("stderr", stderr)):
        # A value the trace kept as a blob reference (its blob not at hand) shows as JSON.
        text = value if isinstance(value, str) else json.dumps(value)
        if len(text) > MAX_OUTPUT_CHARS:
            notes.append(
                f"{name} clipped: the first {MAX_OUTPUT_CHARS:,} of {len(text):,} characters"
            )
            text = text[:MAX_OUTPUT_CHARS]
        streams[name] = text
    if truncated:
        notes.append("the box cut the output off before it was recorded")
    ended = "timed out" if timed_out else "no exit code" if code is None else f"exit code {code}"
    return {"ended": ended, **streams, "notes": notes}


__all__ = ["MAX_OUTPUT_CHARS", "Detail", "PointerTrail"]
