"""Stores to test (memory, local, and postgres with its blobs and frames in SeaweedFS, both
real servers from store_kit) and entries to put in them."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from store_kit import PgServer, S3Server, free_ports, postgres_store

from holm.engine.journal import Journal
from holm.events import LocalStore, MemoryStore, TraceStore
from holm.wire.actions import Click as ClickAction
from holm.wire.actions import Type
from holm.wire.entries import Acted, BoxCreated, BoxPaused, Entry, Executed, FrameSeen
from holm.wire.spec import Placement, Spec, spec_digest
from holm.wire.values import Point

HOUR_MS = 3600 * 1000
DAY_MS = 24 * HOUR_MS


# What holmd's prune keeps of a trace's old entries: what its box's state is folded from.
keep_box_state = Journal.keep


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def paused(at_ms: int = 1_000) -> Entry:
    return BoxPaused(seq=-1, at_ms=at_ms, actor="agent")


def created(box_id: str = "box_1", at_ms: int = 1_000) -> Entry:
    spec = Spec()
    return BoxCreated(
        seq=-1,
        at_ms=at_ms,
        actor="agent",
        box_id=box_id,
        runtime="local",
        spec=spec,
        placement=Placement(expires_after_secs=3600),
        spec_digest=spec_digest(spec),
        expires_at_ms=at_ms + HOUR_MS,
    )


def executed(stdout: Any = "", at_ms: int = 1_000) -> Entry:
    return Executed(
        seq=-1,
        at_ms=at_ms,
        actor="agent",
        argv=["sh", "-c", "echo hi"],
        code=0,
        timed_out=False,
        key="sha256:" + "0" * 64,
        stdout=stdout,
    )


def acted(text: str = "hello", result: Any = None, at_ms: int = 1_000) -> Entry:
    return Acted(
        seq=-1,
        at_ms=at_ms,
        actor="agent",
        screen=0,
        action=Type(text=text),
        ok=True,
        key="sha256:" + "1" * 64,
        result=result,
    )


def clicked(x: int, at_ms: int = 1_000) -> Entry:
    return Acted(
        seq=-1,
        at_ms=at_ms,
        actor="person",
        screen=1,
        action=ClickAction(at=Point(x=x, y=7)),
        ok=True,
        key="sha256:" + "2" * 64,
    )


def frame_seen(frame: str, at_ms: int = 1_000) -> Entry:
    return FrameSeen(seq=-1, at_ms=at_ms, actor="agent", screen=0, frame=frame, width=8, height=8)


@pytest.fixture(params=["memory", "local", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TraceStore]:
    """Each store, for the tests every store must pass."""
    opened: TraceStore
    match request.param:
        case "memory":
            opened = MemoryStore()
        case "local":
            opened = LocalStore(tmp_path)
        case _:
            pg: PgServer = request.getfixturevalue("pg_server")
            s3: S3Server = request.getfixturevalue("s3_server")
            opened = postgres_store(pg, s3.objects())
    yield opened
    await opened.close()


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalStore]:
    opened = LocalStore(tmp_path)
    yield opened
    await opened.close()


__all__ = ["PgServer", "S3Server", "free_ports", "postgres_store"]
