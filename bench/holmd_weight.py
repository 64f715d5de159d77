"""What holmd's `main` does with its session's CPU weight (holm/adapters/local/priority.py),
for the benches that serve holmd's app themselves: a bench's server process leads a session
of its own, as holmd under systemd does. Code from before it (a checkout beside this one)
gets nothing, as its holmd did."""

from __future__ import annotations

import contextlib


def above_boxes() -> contextlib.AbstractContextManager[object]:
    try:
        from holm.adapters.local.priority import holmd_above_boxes
    except ImportError:  # code from before it
        return contextlib.nullcontext()
    return holmd_above_boxes()
