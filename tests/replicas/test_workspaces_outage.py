"""With replicas the workspaces are a document in PostgreSQL that each holmd reads again
every second (holm/http/workspaces.py). A real PostgreSQL of the test's own, stopped and
started: while it is down the keys last read keep working, the outage is one line in the
log when it begins and one when it ends (no traceback each round), and once it is back a
key made through another holmd works here again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

import pytest
from store_kit import PgServer, postgres_store

from holm.engine.reaper import every
from holm.events.objects import FileObjects
from holm.events.shared_docs import shared_doc_of
from holm.http.workspaces import Kept, Workspaces

# Faster than holmd's second, so that many rounds fail while the database is down.
ROUND_SECS = 0.02


class Following:
    """A Workspaces as one holmd keeps it: its `follow` run every round, the rounds done
    counted."""

    def __init__(self, workspaces: Workspaces) -> None:
        self.workspaces = workspaces
        self.rounds = 0
        self.task = asyncio.create_task(every(ROUND_SECS, self._round))

    async def _round(self) -> None:
        try:
            await self.workspaces.follow()
        finally:
            self.rounds += 1

    async def more_rounds(self, count: int) -> None:
        target = self.rounds + count
        while self.rounds < target:
            await asyncio.sleep(ROUND_SECS)

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


async def test_a_database_outage_keeps_the_last_workspaces_and_logs_a_line_each_way(
    own_pg: PgServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stores = [postgres_store(own_pg, FileObjects(tmp_path), "t_workspaces") for _ in range(2)]
    here, there = (Workspaces(tmp_path / f"ws{n}.json", Kept()) for n in range(2))
    for workspaces, store in zip((here, there), stores, strict=True):
        doc = shared_doc_of(store, "workspaces")
        assert doc is not None
        await workspaces.share(doc)
    await there.create_workspace("team")
    key = (await there.create_key("team")).key
    following = Following(here)
    try:
        await following.more_rounds(2)
        team = here.workspace_of(key)
        assert team is not None and team == here.named("team").id

        caplog.clear()
        with caplog.at_level(logging.INFO):
            await asyncio.to_thread(own_pg.stop)
            await following.more_rounds(20)
            # Down: the workspaces last read still answer.
            assert here.workspace_of(key) == team
            assert [w.name for w in here.workspaces()] == ["team"]
            down = [r for r in caplog.records if r.name.startswith("holm")]
            assert [(r.levelno, r.name) for r in down] == [
                (logging.WARNING, "holm.http.workspaces")
            ], [r.getMessage() for r in down]
            assert down[0].exc_info is None and "the database could not" in down[0].getMessage()

            caplog.clear()
            await asyncio.to_thread(own_pg.start)
            # Back: one line, then what another holmd changes is read here again.
            while not any("answers again" in r.getMessage() for r in caplog.records):
                await following.more_rounds(1)
            later = (await there.create_key("team")).key
            while here.workspace_of(later) is None:
                await following.more_rounds(1)
            await following.more_rounds(5)
            back = [r for r in caplog.records if r.name.startswith("holm")]
            assert [(r.levelno, r.name) for r in back] == [(logging.INFO, "holm.http.workspaces")]
            assert back[0].exc_info is None
        assert here.workspace_of(key) == here.workspace_of(later) == team
    finally:
        await following.close()
        for store in stores:
            await store.close()
