"""One run of the suite shared by several pytest processes (scripts/test starts two): each
collects every test, and runs a module only once it has claimed it, by making that module's
file with O_EXCL in a folder they all know ($HOLM_TEST_CLAIMS). The first to ask gets it, so
every module runs once and whole (its module fixtures in one process), and a process that is
done with its module takes the next one nobody has: the load balances itself. Most of the
suite's time is waiting (Chromium boots, docker, fsync), so two processes on two cores
nearly halve the run.

The slowest modules are offered first (their times from the last measured run,
tests/module_times.json), so that no process is left with a long one at the end while the
other is idle. Each process writes the times of the modules it ran to the claims folder;
`python -m kits.workers <claims folder>` merges them into that file.

Without $HOLM_TEST_CLAIMS pytest runs every test itself, as usual."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import defaultdict
from itertools import zip_longest
from pathlib import Path

import pytest

CLAIMS_ENV = "HOLM_TEST_CLAIMS"
TIMES = Path(__file__).resolve().parents[1] / "module_times.json"


def module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _claim(folder: Path, module: str) -> bool:
    name = hashlib.sha256(module.encode()).hexdigest()[:32]
    try:
        fd = os.open(folder / f"{name}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as claim:
        claim.write(f"{os.getpid()} {module}\n")
    return True


def _known_times() -> dict[str, float]:
    try:
        times = json.loads(TIMES.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in times.items()}


def _uses_docker(item: pytest.Item) -> bool:
    return item.get_closest_marker("docker") is not None or "docker_client" in getattr(
        item, "fixturenames", ()
    )


def _uses_the_far_engine(item: pytest.Item) -> bool:
    # Directly, or through the contract suite's `box` fixture, whose `remote_docker` case
    # asks for it by name (so it is in the test's id, not its fixture names).
    return "remote_docker_engine" in getattr(item, "fixturenames", ()) or (
        "[remote_docker" in item.nodeid
    )


def slowest_first(items: list[pytest.Item]) -> list[list[pytest.Item]]:
    """The items by module, in collection order within each, the slowest module first. A
    module with no measured time (a new one) is taken as slow as the slowest known: better
    early than last. Modules that need the Docker Engine alternate with those that do not:
    the first of them waits for the session's image (minutes on a fresh host, under a lock
    both processes take), and the other process should have other work meanwhile. The
    modules that use the second engine (kits/remote_dockerd.py) are one claim, run by one
    process: that engine is a session fixture, and each process that started one would
    send it the box image again (over a minute) and stop it again (as long)."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(module_of(item), []).append(item)
    far = [m for m, its in modules.items() if any(_uses_the_far_engine(i) for i in its)]
    times = _known_times()
    if len(far) > 1:
        together = [item for m in far for item in modules.pop(m)]
        modules[far[0]] = together
        times[far[0]] = sum(times.get(m, 0.0) for m in far)
    unknown = max(times.values(), default=0.0)
    order = sorted(modules, key=lambda m: -times.get(m, unknown))
    docker = [m for m in order if any(_uses_docker(item) for item in modules[m])]
    other = [m for m in order if m not in docker]
    alternated = [m for pair in zip_longest(docker, other) for m in pair if m is not None]
    return [modules[m] for m in alternated]


class _Timer:
    """The time each module took in this process (setup, call and teardown)."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.spent[report.nodeid.split("::", 1)[0]] += report.duration


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    folder = os.environ.get(CLAIMS_ENV)
    if not folder:
        return None
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        raise session.Interrupted(f"{session.testsfailed} errors during collection")
    if session.config.option.collectonly:
        return True
    claims = Path(folder)
    timer = _Timer()
    session.config.pluginmanager.register(timer, "holm-module-timer")
    mine = (group for group in slowest_first(session.items) if _claim(claims, module_of(group[0])))
    current = next(mine, None)
    while current is not None:
        following: list[pytest.Item] | None = None
        for i, item in enumerate(current):
            if i + 1 < len(current):
                nextitem: pytest.Item | None = current[i + 1]
            else:
                # Claimed before this module's last test runs: pytest must know the next
                # test to tear down only the fixtures it does not share.
                following = next(mine, None)
                nextitem = following[0] if following else None
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            if session.shouldfail:
                raise session.Failed(session.shouldfail)
            if session.shouldstop:
                raise session.Interrupted(session.shouldstop)
        current = following
    (claims / f"times.{os.getpid()}.json").write_text(json.dumps(timer.spent))
    return True


def merge_times(claims: Path) -> None:
    """The module times of every process of a run into tests/module_times.json (kept for
    modules this run did not run)."""
    times = _known_times()
    for part in sorted(claims.glob("times.*.json")):
        times.update(json.loads(part.read_text()))
    rounded = {module: round(spent, 1) for module, spent in sorted(times.items())}
    TIMES.write_text(json.dumps(rounded, indent=0) + "\n")


if __name__ == "__main__":
    merge_times(Path(sys.argv[1]))
