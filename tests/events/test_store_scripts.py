"""scripts/postgres-up, postgres-down, seaweedfs-up and seaweedfs-down: each starts its
server only when it is not running already, answers while it runs, and stops only the one
it started, by its pid; a second stop finds nothing to stop."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import asyncpg

from .conftest import PgServer, S3Server, free_ports


def test_postgres_up_and_down_are_idempotent() -> None:
    folder = Path("/tmp") / f"holm-test-pgscripts-{secrets.token_hex(4)}"
    server = PgServer({"HOLM_PG_DIR": str(folder), "HOLM_PG_PORT": str(free_ports(1))}, folder)
    try:
        assert server.start() == "started"
        assert server.start() == "running"
        # The URL is private to its owner; the server answers on it.
        assert (folder / "url").stat().st_mode & 0o077 == 0
        assert asyncio.run(_select_one(server.url)) == 1
        assert server.stop() == "stopped"
        assert server.stop() == "not running"
        # Made once: a second start keeps the cluster and its password.
        assert server.start() == "started"
        assert asyncio.run(_select_one(server.url)) == 1
    finally:
        server.stop(purge=True)
    assert not folder.exists()


async def _select_one(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval("SELECT 1"))
    finally:
        await conn.close()


def test_seaweedfs_up_and_down_are_idempotent() -> None:
    folder = Path("/tmp") / f"holm-test-s3scripts-{secrets.token_hex(4)}"
    env = {
        "HOLM_SEAWEEDFS_DIR": str(folder),
        "HOLM_SEAWEEDFS_PORT": str(free_ports(8)),
        "HOLM_SEAWEEDFS_STOP_SECS": "2",
    }
    server = S3Server(env, folder)
    port = int(env["HOLM_SEAWEEDFS_PORT"])
    sockets = [Path(f"/tmp/seaweedfs-master-grpc-{port + 2}.sock")]
    try:
        assert server.start() == "started"
        assert server.start() == "running"
        assert (folder / "env").stat().st_mode & 0o077 == 0
        pid = int((folder / "weed.pid").read_text())
        assert Path(f"/proc/{pid}").exists()
        assert all(socket.exists() for socket in sockets)
        assert server.stop() == "stopped"
        assert not Path(f"/proc/{pid}").exists()
        # weed's gRPC sockets, always in /tmp, go with it; its logs are in its folder.
        assert not any(socket.exists() for socket in sockets)
        assert list(folder.glob("weed.*"))
        assert server.stop() == "not running"
    finally:
        server.stop(purge=True)
    assert not folder.exists()
