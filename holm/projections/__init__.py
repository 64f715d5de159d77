"""Projections: what is derived from the traces by pure folds over their entries (a box's
state, the events feed, the trace's text and figures), so each can be rebuilt from the log
at any time and equal the live one."""

from holm.projections.box_state import (
    DELETED_REASON,
    LOST_REASON,
    BoxState,
    Holder,
    NotABoxTrace,
    apply,
    fold,
    fold_known,
)
from holm.projections.events_feed import EventsFeed, event_of, events_from_traces, read_page
from holm.projections.stats import TraceStats, trace_stats
from holm.projections.text import INCOMPLETE_LINE, action_text, entry_line, entry_text, render_lines
from holm.wire.feed import LIMIT_DEFAULT, LIMIT_MAX, Event, EventKind, EventsPage

__all__ = [
    "DELETED_REASON",
    "INCOMPLETE_LINE",
    "LIMIT_DEFAULT",
    "LIMIT_MAX",
    "LOST_REASON",
    "BoxState",
    "Event",
    "EventKind",
    "EventsFeed",
    "EventsPage",
    "Holder",
    "NotABoxTrace",
    "TraceStats",
    "action_text",
    "apply",
    "entry_line",
    "entry_text",
    "event_of",
    "events_from_traces",
    "fold",
    "fold_known",
    "read_page",
    "render_lines",
    "trace_stats",
]
