"""`holm new` and `holm fork` on a server that queues its jobs (`HOLM_SERVER_JOBS=queue`):
the server answers at once with a `starting` box; the commands wait until it is ready, or
print it at once with `--no-wait`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from e2e_kit import Holmd

from holm.cli import main
from holm.client import SyncHolmClient

pytestmark = pytest.mark.desktop

START_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def queueing() -> Iterator[Holmd]:
    server = Holmd(HOLM_SERVER_JOBS="queue")
    server.start()
    yield server
    server.close()


def holm(server: Holmd, *args: str) -> Result:
    runner = CliRunner(env=server.client_env)
    return runner.invoke(main, list(args), catch_exceptions=False)


def test_new_waits_for_a_queued_launch_to_be_ready(queueing: Holmd) -> None:
    created = holm(queueing, "new", "--json")
    assert created.exit_code == 0, created.output
    box = json.loads(created.stdout)
    queueing.remove(box["id"])
    assert box["state"] == "ready"


def test_new_without_waiting_prints_the_starting_box(queueing: Holmd) -> None:
    created = holm(queueing, "new", "--no-wait", "--json")
    assert created.exit_code == 0, created.output
    box = json.loads(created.stdout)
    try:
        assert box["state"] == "starting"
        with SyncHolmClient(queueing.url, queueing.token) as client:
            deadline = time.monotonic() + START_TIMEOUT_S
            while client.get_box(box["id"]).state == "starting":
                assert time.monotonic() < deadline, "the queued launch did not run"
                time.sleep(0.2)
            assert client.get_box(box["id"]).state == "ready"
    finally:
        queueing.remove(box["id"])


def test_fork_waits_for_a_queued_fork(queueing: Holmd) -> None:
    created = holm(queueing, "new")
    assert created.exit_code == 0, created.output
    source = created.stdout.strip()
    new_box = ""
    try:
        assert holm(queueing, "exec", source, "--", "true").exit_code == 0
        forked = holm(queueing, "fork", source, "--json")
        assert forked.exit_code == 0, forked.output
        result = json.loads(forked.stdout)
        new_box = result["box"]["id"]
        assert result["box"]["state"] == "ready"
        assert result["box"]["forked_from"]["source"] == source
    finally:
        queueing.remove(source, *[new_box] if new_box else [])
