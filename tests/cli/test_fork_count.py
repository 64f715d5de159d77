"""`holm fork BOX --up-to N --count K` against a real holmd (the in-memory runtime): K boxes,
one ID a line, each replayed up to N."""

from __future__ import annotations

import subprocess
from pathlib import Path

from e2e_kit import HOLM, Holmd, memory_holmd

from holm.client import SyncHolmClient
from holm.wire.entries import ForkedFrom

REPO = Path(__file__).resolve().parents[2]
server = memory_holmd


def test_fork_with_a_count_prints_each_new_box(server: Holmd) -> None:
    with SyncHolmClient(server.url, server.token) as client:
        source = client.create_box().id
        client.exec(source, ["echo", "one"])
        up_to = client.trace(source).entries[-1].seq
        client.exec(source, ["echo", "two"])
    done = subprocess.run(
        [str(HOLM), "fork", source, "--up-to", str(up_to), "--count", "4"],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), **server.client_env},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    ids = done.stdout.decode().split()
    assert len(set(ids)) == 4
    with SyncHolmClient(server.url, server.token) as client:
        for box_id in ids:
            forked = [e for e in client.trace(box_id).entries if isinstance(e, ForkedFrom)]
            assert [(e.source, e.up_to) for e in forked] == [(source, up_to)]
    # Each branch says what its replay did, named.
    assert all(f"{box_id}: replayed 1 of 1 steps" in done.stderr.decode() for box_id in ids)
