"""holmd on the postgres store (`HOLM_STORAGE_BACKEND=postgres`, blobs and frames in
SeaweedFS), run as the real process with the in-memory runtime: a box it serves reads back
through `holm trace` as the database holds it, also from a second holmd with a state dir of
its own (the trace lives in PostgreSQL, not in the state dir); with PostgreSQL stopped a
write answers 503 `unavailable`, retryable, the trace still reads (what holmd last wrote),
and writes work again once it is back."""

from __future__ import annotations

import asyncio
import json
import secrets
import subprocess
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from e2e_kit import HOLM, Holmd
from store_kit import PgServer, S3Server

from holm.client import SyncHolmClient
from holm.errors import Unavailable
from holm.wire.actions import Click
from holm.wire.values import Point

REPO = Path(__file__).resolve().parents[2]


def settings(pg: PgServer, s3: S3Server, prefix: str) -> dict[str, str]:
    return {
        "HOLM_TEST_RUNTIME": "memory",
        "HOLM_DEFAULT_RUNTIME": "memory",
        "HOLM_STORAGE_BACKEND": "postgres",
        "HOLM_DATABASE_URL": pg.url,
        "HOLM_BLOB_URL": f"s3://holm-test/{prefix}",
        **s3.settings,
    }


def holm_trace(server: Holmd, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(HOLM), "trace", *args],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), **server.client_env},
        timeout=60,
        check=False,
    )


async def stored_lines(url: str, trace: str) -> list[dict[str, Any]]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT line FROM holm_entries WHERE trace = $1 ORDER BY seq", trace
        )
    finally:
        await conn.close()
    return [json.loads(row["line"]) for row in rows]


def test_a_box_served_on_postgres_reads_back_through_holm_trace(
    own_pg: PgServer, s3_server: S3Server
) -> None:
    prefix = secrets.token_hex(6)
    first = Holmd(**settings(own_pg, s3_server, prefix))
    first.start()
    try:
        with SyncHolmClient(first.url, first.token) as client:
            box = client.create_box().id
            client.act(box, [Click(at=Point(x=10, y=20))])

            own_pg.stop()
            with pytest.raises(Unavailable) as refused:
                client.act(box, [Click(at=Point(x=11, y=21))])
            assert refused.value.retryable
            # What holmd wrote is still read, from its memory.
            while_down = holm_trace(first, box, "--json")
            assert while_down.returncode == 0, while_down.stderr.decode()
            kinds = [json.loads(line)["kind"] for line in while_down.stdout.splitlines()]
            assert kinds[0] == "box_created" and "acted" in kinds
            own_pg.start()
            client.act(box, [Click(at=Point(x=12, y=22))])

        done = holm_trace(first, box, "--json")
        assert done.returncode == 0, done.stderr.decode()
        printed = [json.loads(line) for line in done.stdout.splitlines()]
        stored = asyncio.run(stored_lines(own_pg.url, box))
        assert printed == stored
        assert [entry["seq"] for entry in stored] == list(range(len(stored)))
        assert stored[0]["kind"] == "box_created"
        clicks = [e["action"]["at"]["x"] for e in stored if e["kind"] == "acted"]
        # The click refused while the database was down was not recorded.
        assert clicks == [10, 12]
        text = holm_trace(first, box)
        assert text.returncode == 0, text.stderr.decode()
    finally:
        first.close()  # removes the box: `box_deleted` ends its trace

    # Another holmd, another (empty) state dir, the same database.
    second = Holmd(**settings(own_pg, s3_server, prefix))
    second.start()
    try:
        done = holm_trace(second, box, "--json")
        assert done.returncode == 0, done.stderr.decode()
        printed = [json.loads(line) for line in done.stdout.splitlines()]
        assert printed == asyncio.run(stored_lines(own_pg.url, box))
        assert printed[-1]["kind"] == "box_deleted"
    finally:
        second.close()
