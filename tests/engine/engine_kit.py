"""What the engine's tests share: the server id of their runtimes, the watchers' poll, and
reading a trace back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgspec

from holm.engine import Engine
from holm.wire.actions import Exec, ExecWhat
from holm.wire.entries import Entry
from holm.wire.results import ExecResult, expect

SERVER_ID = "srv_test"
# Fast enough that a test waits little for a frame; the tests never assert on timing.
POLL_SECS = 0.02

MakeEngine = Callable[..., Awaitable[Engine]]


async def trace_of(engine: Engine, box_id: str) -> list[Entry]:
    page = await engine.read_trace(box_id)
    return page.entries


def without_frames(entries: Sequence[Entry]) -> list[Entry]:
    """The entries but `frame`: a watcher records those whenever it looks."""
    return [e for e in entries if kinds([e]) != ["frame"]]


def kinds(entries: Sequence[Entry]) -> list[str]:
    return [str(type(e).__struct_config__.tag) for e in entries]


def fields(entry: Entry, *names: str) -> dict[str, Any]:
    """Some fields of an entry as written (JSON values), whatever its kind."""
    written = msgspec.to_builtins(entry)
    return {name: written[name] for name in names}


async def run(engine: Engine, box_id: str, *argv: str, timeout_ms: int = 1000) -> ExecResult:
    """`exec` in a box through the engine, as `POST …/exec` does."""
    what = ExecWhat(argv=list(argv), timeout_ms=timeout_ms)
    return expect(await engine.act(box_id, 0, Exec(what=what)), ExecResult)
