"""SIGKILL of one holmd under load (docs/scale.md): three real holmd, each with its own state
dir, on one PostgreSQL, one SeaweedFS and one Docker Engine that every one reaches; eight
clients click on three boxes the first holmd owns, through all three holmd, while it is
killed. Every click a client was answered is in the store once; the boxes are owned by a
survivor (which recorded `adopted` in each trace, then `box_paused` for the one that was
paused) and go on answering through either survivor; each trace is contiguous; the
events feed reads the same through each survivor, with no event twice."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Iterator

import aiohttp
import asyncpg
import docker
import pytest
from kits.holmd import TOKEN, Holmd
from replica_kit import fresh_database, ok, whole_feed, whole_trace
from store_kit import PgServer, S3Server

from holm.config import server_id_of

pytestmark = pytest.mark.docker

AUTH = {"Authorization": f"Bearer {TOKEN}"}
LEASE_MS = 3000
BOXES = 3
CLIENTS = 8
# How long a take-over may take at most here: a lease, a heartbeat, and the adoption on a
# loaded 2-core host (docs/scale.md; bench/replicas.py measures it).
TAKE_OVER_BOUND_S = 30.0


@pytest.fixture
def cluster(
    pg_server: PgServer, s3_server: S3Server, docker_client: docker.DockerClient
) -> Iterator[tuple[list[Holmd], str]]:
    url = asyncio.run(fresh_database(pg_server))
    prefix = secrets.token_hex(6)
    servers = [
        Holmd(
            runtime="docker",
            HOLM_STORAGE_BACKEND="postgres",
            HOLM_DATABASE_URL=url,
            HOLM_BLOB_URL=f"s3://holm-test/{prefix}",
            HOLM_LEASE_MS=str(LEASE_MS),
            **s3_server.settings,
        )
        for _ in range(3)
    ]
    try:
        for server in servers:
            server.start()
        yield servers, url
    finally:
        for server in servers:
            server.close()


async def owners(url: str, boxes: list[str]) -> dict[str, str]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT box, owner FROM holm_box_leases WHERE box = any($1::text[])", boxes
        )
    finally:
        await conn.close()
    return {row["box"]: row["owner"] for row in rows}


async def stored_clicks(url: str, box: str) -> list[tuple[int, int]]:
    """Each click the store holds for `box`, as (x, y)."""

    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT line FROM holm_entries WHERE trace = $1 ORDER BY seq", box)
    finally:
        await conn.close()
    clicks = []
    for row in rows:
        line = json.loads(row["line"])
        if line["kind"] == "acted" and line["action"]["type"] == "click":
            clicks.append((line["action"]["at"]["x"], line["action"]["at"]["y"]))
    return clicks


class Load:
    """Clients clicking on the boxes through every holmd; what each was answered."""

    def __init__(self, servers: list[Holmd], boxes: list[str]) -> None:
        self.servers = servers
        self.boxes = boxes
        self.acked: dict[str, list[tuple[int, int]]] = {box: [] for box in boxes}
        self.refused: list[str] = []
        self.stop = asyncio.Event()

    async def client(self, session: aiohttp.ClientSession, number: int) -> None:
        count = 0
        while not self.stop.is_set():
            count += 1
            box = self.boxes[(number + count) % len(self.boxes)]
            server = self.servers[(number + count) % len(self.servers)]
            # x says which client, y which of its clicks: each click is one of a kind.
            at = (20 + number, 20 + count)
            click = {"actions": [{"type": "click", "at": {"x": at[0], "y": at[1]}}]}
            try:
                async with session.post(
                    f"{server.url}/v1/boxes/{box}/screens/0/actions", json=click
                ) as answer:
                    body = await answer.json()
                    if answer.status == 200 and body["results"][0]["ok"]:
                        self.acked[box].append(at)
                    elif not body.get("retryable"):
                        self.refused.append(f"{answer.status} {body}")
            except (aiohttp.ClientError, OSError):
                # Its holmd was killed mid-request: not answered, so not acknowledged.
                pass
            await asyncio.sleep(0.02)


async def test_a_killed_holmds_boxes_are_taken_over_with_every_acknowledged_click(
    cluster: tuple[list[Holmd], str],
) -> None:
    servers, url = cluster
    a, b, c = servers
    async with aiohttp.ClientSession(headers=AUTH) as http:
        boxes = [
            (await ok(await http.post(f"{a.url}/v1/boxes", json={})))["id"] for _ in range(BOXES)
        ]
        # And one paused, which no client drives: it is taken over paused.
        paused = (await ok(await http.post(f"{a.url}/v1/boxes", json={})))["id"]
        await ok(await http.post(f"{b.url}/v1/boxes/{paused}/pause"))
        killed = server_id_of(a.state_dir)
        assert set((await owners(url, [*boxes, paused])).values()) == {killed}

        load = Load(servers, boxes)
        clients = [asyncio.ensure_future(load.client(http, n)) for n in range(CLIENTS)]
        await asyncio.sleep(2.0)
        before = sum(len(done) for done in load.acked.values())
        await asyncio.to_thread(a.kill)
        load.servers = [b, c]
        killed_at = time.monotonic()
        while True:
            held = await owners(url, [*boxes, paused])
            if all(owner != killed for owner in held.values()):
                break
            assert time.monotonic() - killed_at < TAKE_OVER_BOUND_S, held
            await asyncio.sleep(0.1)
        taken_after = sum(len(done) for done in load.acked.values())
        # The survivors go on answering for every box.
        deadline = time.monotonic() + TAKE_OVER_BOUND_S
        while sum(len(done) for done in load.acked.values()) < taken_after + 3 * BOXES:
            assert time.monotonic() < deadline, load.acked
            await asyncio.sleep(0.2)
        load.stop.set()
        await asyncio.gather(*clients)
    assert before > 0 and not load.refused, load.refused
    assert set(held.values()) <= {server_id_of(b.state_dir), server_id_of(c.state_dir)}

    async with aiohttp.ClientSession(headers=AUTH) as http:
        for box in boxes:
            stored = await stored_clicks(url, box)
            # Every acknowledged click is stored, once.
            assert len(stored) == len(set(stored))
            assert set(load.acked[box]) <= set(stored)
            traces = [await whole_trace(http, server.url, box) for server in (b, c)]
            assert traces[0] == traces[1]
            seqs = [item["seq"] for item in traces[0]]
            assert seqs == list(range(len(seqs)))
            kinds = [item["kind"] for item in traces[0]]
            assert "adopted" in kinds
            # After the adoption the box is driven again.
            adopted = kinds.index("adopted")
            assert "acted" in kinds[adopted:]

        after = [item["kind"] for item in await whole_trace(http, c.url, paused)]
        assert after[-2:] == ["adopted", "box_paused"], after
        assert (await ok(await http.get(f"{b.url}/v1/boxes/{paused}")))["state"] == "paused"

        await asyncio.sleep(1.0)
        feeds = [await whole_feed(http, server.url) for server in (b, c)]
        assert feeds[0] == feeds[1]
        seqs = [event["seq"] for event in feeds[0]]
        assert seqs == sorted(set(seqs))
        created = [e["box_id"] for e in feeds[0] if e["kind"] == "box.created"]
        assert sorted(created) == sorted([*boxes, paused])
