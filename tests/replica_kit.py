"""What the replicas' tests share (tests/replicas/): a fresh database on the test cluster,
and reading answers and whole traces through any holmd."""

from __future__ import annotations

import json
import secrets
from typing import Any

import aiohttp
import asyncpg
from store_kit import PgServer


async def fresh_database(pg: PgServer) -> str:
    """A database of its own on the test cluster: what a new deployment starts on."""
    name = "replicas_" + secrets.token_hex(5)
    conn = await asyncpg.connect(pg.url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    base, _, _ = pg.url.rpartition("/")
    return f"{base}/{name}"


async def ok(answer: aiohttp.ClientResponse) -> Any:
    body = await answer.json()
    assert answer.status in (200, 202), body
    return body


async def whole_trace(http: aiohttp.ClientSession, base: str, box: str) -> list[Any]:
    entries: list[Any] = []
    after: int | None = None
    while True:
        query = "" if after is None else f"?after={after}"
        page = await ok(await http.get(f"{base}/v1/boxes/{box}/trace{query}"))
        entries.extend(page["entries"])
        if not page["more"]:
            return entries
        after = page["next"]


async def whole_feed(http: aiohttp.ClientSession, base: str) -> list[Any]:
    """Every event served now through the holmd at `base`, its own address in viewers'
    URLs made the same for all (each holmd names itself there)."""
    found: list[Any] = []
    after = 0
    while True:
        page = await ok(await http.get(f"{base}/v1/events?after={after}&limit=500"))
        text = json.dumps(page["events"]).replace(base, "http://holmd")
        found.extend(json.loads(text))
        if not page["more"]:
            return found
        after = page["next"]


__all__ = ["fresh_database", "ok", "whole_feed", "whole_trace"]
