"""Real servers for the stores' tests: a private PostgreSQL cluster (scripts/postgres-up)
and a private SeaweedFS (scripts/seaweedfs-up), each started once per test session when a
test first asks for it, on free loopback ports and in a fresh folder under /tmp, and
stopped (by pid) and removed at the end. `PgServer.stop()`/`start()` let a test take one
down under load and bring it back on the same port and data."""

from __future__ import annotations

import os
import random
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from holm.events.objects import ObjectStore
from holm.events.postgres import PostgresStore
from holm.events.s3 import S3Objects

REPO = Path(__file__).resolve().parent.parent


def free_ports(count: int) -> int:
    """The first of `count` consecutive loopback ports that are free now, below the
    ephemeral range: SeaweedFS's servers dial each other while the last still bind, and an
    outgoing connection's port taken from that range could be one of theirs."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(200):
        base = random.randrange(20_000, min(low, 32_768) - count)
        sockets = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
        return base
    raise RuntimeError("no free loopback ports")


class _Server:
    up: str
    down: str

    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env = {**os.environ, **env}
        self.folder = folder

    def start(self) -> str:
        done = subprocess.run(
            [str(REPO / "scripts" / self.up)],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{self.up}: {done.stderr}"
        return done.stdout.strip()

    def stop(self, purge: bool = False) -> str:
        env = {**self.env, "HOLM_PG_PURGE": "1" if purge else "0"}
        env["HOLM_SEAWEEDFS_PURGE"] = env["HOLM_PG_PURGE"]
        done = subprocess.run(
            [str(REPO / "scripts" / self.down)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{self.down}: {done.stderr}"
        return done.stdout.strip()


class PgServer(_Server):
    up, down = "postgres-up", "postgres-down"

    @property
    def url(self) -> str:
        return (self.folder / "url").read_text().strip()


class S3Server(_Server):
    up, down = "seaweedfs-up", "seaweedfs-down"

    @property
    def settings(self) -> dict[str, str]:
        lines = (self.folder / "env").read_text().split()
        return dict(line.split("=", 1) for line in lines)

    def objects(self, prefix: str | None = None) -> S3Objects:
        settings = self.settings
        return S3Objects(
            f"s3://holm-test/{prefix or secrets.token_hex(6)}",
            endpoint=settings["HOLM_S3_ENDPOINT"],
            region=settings["AWS_REGION"],
            environ=settings,
        )


def _folder(prefix: str) -> Path:
    # Under /tmp (not pytest's 0700 tmp_path): PostgreSQL runs as the `postgres` user.
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    folder = _folder("holm-test-pg-")
    server = PgServer({"HOLM_PG_DIR": str(folder), "HOLM_PG_PORT": str(free_ports(1))}, folder)
    try:
        server.start()
        yield server
    finally:
        server.stop(purge=True)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    folder = _folder("holm-test-s3-")
    env = {"HOLM_SEAWEEDFS_DIR": str(folder), "HOLM_SEAWEEDFS_PORT": str(free_ports(8))}
    server = S3Server(env, folder)
    try:
        server.start()
        yield server
    finally:
        server.stop(purge=True)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def own_pg() -> Iterator[PgServer]:
    """A PostgreSQL of the test's own, to stop and start (the session's serves the others)."""
    folder = Path("/tmp") / f"holm-test-pgown-{secrets.token_hex(4)}"
    server = PgServer({"HOLM_PG_DIR": str(folder), "HOLM_PG_PORT": str(free_ports(1))}, folder)
    server.start()
    try:
        yield server
    finally:
        server.stop(purge=True)


def postgres_store(
    pg: PgServer, objects: ObjectStore, schema: str | None = None, **options: object
) -> PostgresStore:
    """A store on its own schema of the test cluster: a store as a fresh database sees it."""
    return PostgresStore(
        pg.url,
        objects,
        schema=schema or "t_" + secrets.token_hex(6),
        **options,  # type: ignore[arg-type]
    )


__all__ = [
    "PgServer",
    "S3Server",
    "free_ports",
    "own_pg",
    "pg_server",
    "postgres_store",
    "s3_server",
]
