"""Fixtures of the local runtime's tests: a short state dir (Unix socket paths are short),
sandboxes of plain processes, and runtimes whose boxes are all ended when a test ends."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from kits.net import hi_server

from holm.adapters.local import network as network_module
from holm.adapters.local import procs
from holm.adapters.local.records import read_records
from holm.adapters.local.runtime import BOOTS_AT_ONCE, LocalRuntime
from holm.adapters.local.sandbox import (
    BOX_UID,
    SandboxPlan,
    box_bwrap_at,
    box_env,
    bwrap_argv,
    launch,
)

# The X displays these tests may use (the machine is shared).
DISPLAY_BASE = 220
DISPLAY_COUNT = 20


@pytest.fixture
def state_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="h4-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def plan(state_dir: Path, name: str, *, network: bool) -> SandboxPlan:
    home, run = state_dir / name / "home", state_dir / name / "run"
    for folder in (home, run):
        folder.mkdir(parents=True, exist_ok=True)
        os.chown(folder, BOX_UID, BOX_UID)
    return SandboxPlan(
        home=home,
        run_dir=run,
        network=network,
        screens=1,
        width=1280,
        height=800,
        display_base=DISPLAY_BASE,
    )


def dying_with_parent(argv: list[str]) -> list[str]:
    """`argv` (from `bwrap_argv`) whose both bwraps end when their parent does: a snippet
    must not outlive the test. (The inner one's parent is the outer one.)"""
    argv = list(argv)
    inner = box_bwrap_at(argv)
    argv.insert(inner + 2, "--die-with-parent")
    argv.insert(1, "--die-with-parent")
    return argv


Completed = subprocess.CompletedProcess[str]
RunInBox = Callable[..., Completed]


def run_sandboxed(
    state_dir: Path, code: str, *, name: str = "a", network: bool = False
) -> Completed:
    """Run a Python snippet in a sandbox made exactly as a box's (launched as a box is,
    the agent replaced by the snippet), and wait for it."""
    box = plan(state_dir, name, network=network)
    argv = dying_with_parent(bwrap_argv(box, ["python3", "-c", code]))
    out = Path(tempfile.mkstemp(prefix="out-", dir=state_dir)[1])
    err = Path(tempfile.mkstemp(prefix="err-", dir=state_dir)[1])

    def attach(init_pid: int) -> network_module.Attaching:
        # Up before the snippet runs, as a box's network is before its first command.
        attaching = network_module.attach(init_pid, box.box_uid, err)
        attaching.wait()
        return attaching

    launched = launch(
        argv,
        out,
        env=box_env(box),
        attach_network=attach if network else None,
        stderr_path=err,
    )
    try:
        code_ = launched.process.wait(timeout=60)
    finally:
        procs.end(launched.init_pid, launched.init_start, 1.0)
        if launched.network is not None:
            procs.end_one(*launched.network.wait(), 1.0)
        launched.process.wait()
    return subprocess.CompletedProcess(argv, code_, out.read_text(), err.read_text())


@pytest.fixture
def run_in_box(state_dir: Path) -> RunInBox:
    """Run a Python snippet in a sandbox built exactly as a box's (the agent replaced by
    the snippet); boxes of one name share their home."""

    def run(code: str, *, name: str = "a", network: bool = False) -> Completed:
        return run_sandboxed(state_dir, code, name=name, network=network)

    return run


@pytest.fixture
def tcp_server() -> Iterator[int]:
    """A TCP server on the host's 127.0.0.1 that answers b"hi" to every connection."""
    with hi_server("127.0.0.1") as port:
        yield port


MakeRuntime = Callable[..., LocalRuntime]


@pytest.fixture
async def make_runtime(state_dir: Path) -> AsyncIterator[MakeRuntime]:
    """LocalRuntime objects on one state dir; at the end every box in it is ended, whatever
    the test left behind, and no process of any of them is left."""
    made: list[LocalRuntime] = []

    def make(
        *,
        chromium: bool = True,
        server_id: str = "test-server",
        ready_timeout_s: float = 90.0,
        boots_at_once: int | None = BOOTS_AT_ONCE,
    ) -> LocalRuntime:
        runtime = LocalRuntime(
            state_dir / "boxes",
            server_id,
            display_base=DISPLAY_BASE,
            display_count=DISPLAY_COUNT,
            chromium=chromium,
            ready_timeout_s=ready_timeout_s,
            boots_at_once=boots_at_once,
        )
        made.append(runtime)
        return runtime

    yield make
    inits = _box_inits(state_dir / "boxes")
    cleaner = LocalRuntime(state_dir / "boxes", "cleaner", display_base=DISPLAY_BASE)
    for box in await cleaner.list():
        await cleaner.delete(box.box_id)
    for runtime in made:
        await runtime.close()
    await cleaner.close()
    left = [pid for pid, start in inits if procs.is_alive(pid, start)]
    assert not left, f"box processes left running: {left}"


def _box_inits(boxes_dir: Path) -> list[tuple[int, int]]:
    """Each box's init and its pasta: the processes that must end with it."""
    found = []
    for r in read_records(boxes_dir):
        if r.init_pid is not None and r.init_start is not None:
            found.append((r.init_pid, r.init_start))
        if r.net_pid is not None and r.net_start is not None:
            found.append((r.net_pid, r.net_start))
    return found


async def wait_for(check: Callable[[], object], timeout_s: float = 10.0) -> None:
    """Poll `check` until it is true (a state change, not a timing claim)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"{check} stayed false")
        await asyncio.sleep(0.05)
