"""The comparison policies of the replay interpreter: what counts as a failed step, and what a
strict replay checks against the recording.

- `ForkPolicy` (a fork): a step fails when it is refused, or when a command that succeeded in
  the source (exit 0, in time) does not succeed now. Output may differ: a fork is a new run.
- `StrictPolicy` (golden replays, `holm replay --strict`): the cursor must meet every recorded
  step with the same outcome: it succeeded; an exec's exit code, stdout, stderr and time-out
  are equal; and, where the source recorded the screen settled after a step, the new screen
  reaches the same pixels (or, when a run asks for a `frame_tolerance`, pixels that close to
  them; the frame check can be turned off per run with `compare_frames=False`, for screens
  that are not deterministic: animations, clocks, carets).
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import msgspec

from holm.replay.plan import SETTLED_MS, ExpectedFrame, Step
from holm.wire.api import Outcome
from holm.wire.results import ExecResult

# The same pixels, by default: a deterministic run replays to them exactly (Chromium's window
# is maximised for that, desktop_up.py), so any difference is a divergence worth seeing.
FRAME_TOLERANCE = 0.0


class Divergence(msgspec.Struct, kw_only=True):
    """Where a replay left the recording: the source `seq`, what differed, and both sides."""

    seq: int
    what: Literal["ok", "exec", "frame"]
    expected: Any
    actual: Any

    def describe(self) -> str:
        return (
            f"diverged at seq {self.seq} ({self.what}): expected {_short(self.expected)}, "
            f"got {_short(self.actual)}"
        )


class ReplayPolicy(Protocol):
    def judge(self, step: Step, outcome: Outcome) -> Divergence | None:
        """The reason to stop after this step, or None to go on."""
        ...

    def frame_to_meet(self, step: Step) -> ExpectedFrame | None:
        """The screen the replay must reach after this step, if any."""
        ...

    @property
    def frame_within_ms(self) -> int:
        """How long the screen may take to reach an expected frame."""
        ...

    @property
    def frame_tolerance(self) -> float:
        """The largest distance (mean absolute difference, 0–1) from the expected frame that
        still counts as reaching it; 0 asks for the same pixels."""
        ...


class ForkPolicy(msgspec.Struct, kw_only=True):
    frame_within_ms: int = 0
    frame_tolerance: float = 0.0

    def judge(self, step: Step, outcome: Outcome) -> Divergence | None:
        if not outcome.ok:
            return _refused(step, outcome)
        expected = step.expect.exec
        actual = outcome.exec
        if (
            expected is not None
            and actual is not None
            and expected.succeeded
            and not actual.succeeded
        ):
            return Divergence(
                seq=step.seq,
                what="exec",
                expected=_exec_status(expected),
                actual=_exec_status(actual),
            )
        return None

    def frame_to_meet(self, step: Step) -> ExpectedFrame | None:
        return None


class StrictPolicy(msgspec.Struct, kw_only=True):
    compare_frames: bool = True
    # A recorded frame counts as the settled screen after a step when it stayed this long.
    settled_ms: int = SETTLED_MS
    frame_within_ms: int = 5000
    frame_tolerance: float = FRAME_TOLERANCE

    def judge(self, step: Step, outcome: Outcome) -> Divergence | None:
        if not outcome.ok:
            return _refused(step, outcome)
        expected = step.expect.exec
        if expected is None:
            return None
        if outcome.exec is None or outcome.exec != expected:
            return Divergence(
                seq=step.seq,
                what="exec",
                expected=msgspec.to_builtins(expected),
                actual=msgspec.to_builtins(outcome.exec),
            )
        return None

    def frame_to_meet(self, step: Step) -> ExpectedFrame | None:
        frame = step.expect.frame
        if not self.compare_frames or frame is None or not frame.settled(self.settled_ms):
            return None
        return frame


def _refused(step: Step, outcome: Outcome) -> Divergence:
    return Divergence(
        seq=step.seq,
        what="ok",
        expected={"ok": True},
        actual={"ok": False, "error": msgspec.to_builtins(outcome.error)},
    )


def _exec_status(outcome: ExecResult) -> dict[str, Any]:
    return {"code": outcome.code, "timed_out": outcome.timed_out}


def _short(value: Any, limit: int = 200) -> str:
    text = msgspec.json.encode(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["FRAME_TOLERANCE", "Divergence", "ForkPolicy", "Outcome", "ReplayPolicy", "StrictPolicy"]
