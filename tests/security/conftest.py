"""Fixtures of the security tests: real boxes to attack from inside, a secret in the test
process's environment (the stand-in for holmd's), a TCP server on the host's loopback, and
a test host of the test's own (a network namespace joined to the host by a veth pair).

Boxes are driven from a loop of their own in a thread, so that one box can serve every
test of a module (pytest's async fixtures are tied to one test's loop).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import tempfile
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest
from desktop_kit import run as run_in_box
from kits.net import hi_server, served_host

from holm.adapters.base import Desktop
from holm.adapters.local import procs
from holm.adapters.local.records import BoxPaths, BoxRecord, read_record, read_records
from holm.adapters.local.runtime import LocalRuntime
from holm.wire.results import ExecResult
from holm.wire.spec import Placement, Policy, Spec

# The HTTP kits (holmd's app over real local boxes) are tests/http's, shared, not copied.

T = TypeVar("T")

# X displays no other test uses (the machine is shared).
DISPLAY_BASE = 420
DISPLAY_COUNT = 20
SECRET_NAME = "HOLM_TEST_SECRET"
# Set at import, before any runtime of these tests launches a box: every box starts after
# it, as a box of a holmd that holds a token would.
SECRET = f"marker-{secrets.token_hex(8)}"
os.environ[SECRET_NAME] = SECRET


class Loop:
    """An event loop in a thread, for boxes shared by the tests of a module."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, work: Coroutine[Any, Any, T], timeout_s: float = 300.0) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout_s)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class BoxRuntime(Protocol):
    async def desktop(self, box_id: str) -> Desktop: ...


@dataclass
class Box:
    runtime: BoxRuntime
    box_id: str
    loop: Loop

    def exec(self, script: str, timeout_ms: int = 60_000) -> ExecResult:
        """`sh -c script` in the box, through the box's exec as an agent's command runs."""

        async def run() -> ExecResult:
            desktop = await self.runtime.desktop(self.box_id)
            return await run_in_box(desktop, "sh", "-c", script, timeout_ms=timeout_ms)

        return self.loop.run(run())

    def sh(self, script: str, timeout_ms: int = 60_000) -> str:
        """The output of a script that must succeed."""
        result = self.exec(script, timeout_ms)
        assert result.code == 0, result
        return result.stdout

    def python(self, code: str, timeout_ms: int = 60_000) -> ExecResult:
        async def run() -> ExecResult:
            desktop = await self.runtime.desktop(self.box_id)
            return await run_in_box(desktop, "python3", "-c", code, timeout_ms=timeout_ms)

        return self.loop.run(run())


@pytest.fixture(scope="session")
def loop() -> Iterator[Loop]:
    running = Loop()
    yield running
    running.close()


@pytest.fixture(scope="session")
def state_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="hs-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@dataclass
class LocalBoxes:
    runtime: LocalRuntime
    loop: Loop

    def create(self, *, network: bool, chromium_runtime: LocalRuntime | None = None) -> Box:
        runtime = chromium_runtime or self.runtime
        box_id = f"box_{secrets.token_hex(6)}"
        self.loop.run(runtime.create(box_id, Spec(policy=Policy(network=network)), Placement()))
        return Box(runtime, box_id, self.loop)

    def record(self, box: Box) -> BoxRecord:
        record = read_record(BoxPaths(self.runtime.boxes_dir, box.box_id).record)
        assert record is not None
        return record

    def pids(self, box: Box) -> list[int]:
        record = self.record(box)
        assert record.init_pid is not None and record.init_start is not None
        return procs.tree(record.init_pid, record.init_start)

    def delete(self, box: Box) -> None:
        self.loop.run(self.runtime.delete(box.box_id))


def make_local_runtime(state_dir: Path, **options: Any) -> LocalRuntime:
    return LocalRuntime(
        state_dir / "boxes",
        "security-tests",
        display_base=DISPLAY_BASE,
        display_count=DISPLAY_COUNT,
        **options,
    )


@pytest.fixture(scope="session")
def local(loop: Loop, state_dir: Path) -> Iterator[LocalBoxes]:
    """The local runtime of these tests; every box in its state dir is deleted at the end,
    and no process of any is left."""
    runtime = make_local_runtime(state_dir)
    yield LocalBoxes(runtime, loop)
    records = _records(state_dir)
    for box in loop.run(runtime.list()):
        loop.run(runtime.delete(box.box_id))
    loop.run(runtime.close())
    ended = [(r.init_pid, r.init_start) for r in records] + [
        (r.net_pid, r.net_start) for r in records
    ]
    left = [pid for pid, start in ended if pid and start and procs.is_alive(pid, start)]
    assert not left, f"box processes (or their pasta) left running: {left}"


def _records(state_dir: Path) -> list[BoxRecord]:
    return read_records(state_dir / "boxes")


# A TCP server on the host's loopback


@pytest.fixture(scope="session")
def loopback_server() -> Iterator[int]:
    """A TCP server on the host's 127.0.0.1 that answers b"hi" to every connection: what
    holmd, or any service of the host bound to its loopback, is to a box."""
    with hi_server("127.0.0.1") as port:
        yield port


# A test host of the test's own


@dataclass
class FarHost:
    """A host the tests made: a network namespace joined to the host by a veth pair."""

    netns: str
    host_address: str
    address: str
    http_port: int
    # What GET /payload answers.
    payload: bytes
    # A TCP server bound to the host's end of the veth, one of the host's own addresses.
    host_side_port: int


@pytest.fixture(scope="session")
def test_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FarHost]:
    payload = secrets.token_bytes(4 << 20)
    served = tmp_path_factory.mktemp("served")
    (served / "payload").write_bytes(payload)
    with served_host(served, "sec") as host, hi_server(host.host_address) as host_side_port:
        yield FarHost(
            host.netns, host.host_address, host.address, host.http_port, payload, host_side_port
        )
