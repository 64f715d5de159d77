"""What the replicas' tests share as fixtures: a client with the holmd's token, and two
real holmd on one PostgreSQL and one SeaweedFS with an in-memory runtime each (A with a
warm pool of one, B without), started once for every module that asks for them."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
from kits.holmd import TOKEN, Holmd
from replica_kit import fresh_database
from store_kit import PgServer, S3Server


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """A client session that sends the token every holmd of the tests takes."""
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}) as session:
        yield session


@pytest.fixture(scope="session")
def pair(pg_server: PgServer, s3_server: S3Server) -> Iterator[tuple[Holmd, Holmd]]:
    """Holmd A (a pool of one spare) and B (none): a box runs on the holmd that made it,
    and every request for it through the other is sent there. Tests that use it leave no
    box of theirs behind and change neither holmd's settings."""
    url = asyncio.run(fresh_database(pg_server))
    shared = {
        "HOLM_STORAGE_BACKEND": "postgres",
        "HOLM_DATABASE_URL": url,
        "HOLM_BLOB_URL": f"s3://holm-test/{secrets.token_hex(6)}",
        **s3_server.settings,
    }
    a = Holmd(runtime="memory", HOLM_POOL="default:1", **shared)
    b = Holmd(runtime="memory", **shared)
    try:
        a.start()
        b.start()
        yield a, b
    finally:
        b.close()
        a.close()
