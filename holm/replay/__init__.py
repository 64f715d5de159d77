"""Fork and replay: a pure plan over a source trace, an interpreter that does its steps on a
new box through the engine, comparison policies (a fork's, a strict replay's), and the diff
of two traces."""

from holm.replay.diff import diff_traces
from holm.replay.interpreter import fork_box, fork_run, replay_plan
from holm.replay.plan import Plan, plan_fork
from holm.replay.strict import Divergence, ForkPolicy, StrictPolicy
from holm.wire.diff import TraceDiff

__all__ = [
    "Divergence",
    "ForkPolicy",
    "Plan",
    "StrictPolicy",
    "TraceDiff",
    "diff_traces",
    "fork_box",
    "fork_run",
    "plan_fork",
    "replay_plan",
]
