"""`holm runtimes` shows each runtime's warm pool (its spares up, of those asked for) and,
while the spares do not start, says why on stderr: against real holmd processes on the
in-memory double, one whose creates all fail as on a host where boxes cannot start."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from e2e_kit import Holmd

from holm.cli import main

WHY = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"
# The bound on the wait for a spare the double starts in milliseconds.
FILL_WAIT_S = 30.0


def runtimes(server: Holmd) -> Result:
    result = CliRunner(env=server.client_env).invoke(main, ["runtimes"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result


@pytest.fixture
def servers() -> Iterator[list[Holmd]]:
    started: list[Holmd] = []
    yield started
    for server in started:
        server.close()


def test_runtimes_shows_the_pool_and_why_its_spares_do_not_start(servers: list[Holmd]) -> None:
    healthy = Holmd(runtime="memory", HOLM_POOL="default:1")
    failing = Holmd(runtime="memory", HOLM_POOL="default:1", HOLM_TEST_FAIL_CREATE=WHY)
    for server in (healthy, failing):
        servers.append(server)
        server.start()

    deadline = time.monotonic() + FILL_WAIT_S
    while (shown := runtimes(healthy)).stdout.splitlines()[1].split()[-1] != "1/1":
        assert time.monotonic() < deadline, shown.stdout
        time.sleep(0.05)
    assert shown.stderr == ""

    # Its first spare fails as the server starts; the wait is bounded all the same.
    while not (shown := runtimes(failing)).stderr:
        assert time.monotonic() < deadline, shown.stdout
        time.sleep(0.05)
    assert shown.stdout.splitlines()[0].split() == ["NAME", "DEFAULT", "CAN", "POOL"]
    assert shown.stdout.splitlines()[1].split()[-1] == "0/1"
    (note,) = shown.stderr.splitlines()
    assert note.startswith("holm: spares of sha256:"), note
    assert " on memory do not start (1 in a row; next try in " in note
    assert note.endswith(f"): {WHY}")
