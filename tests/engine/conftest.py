"""Fixtures of the engine's tests: an engine over a real store (memory or local) and the
in-memory test-double runtime (holm.adapters.memory.runtime), with its loops off so that each
test calls the reaper and the jobs itself."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from engine_kit import POLL_SECS, SERVER_ID, MakeEngine

from holm.adapters.memory.runtime import MemoryRuntime, MemoryWorld
from holm.config import Config, load_config
from holm.engine import Engine
from holm.events import LocalStore, MemoryStore
from holm.events.store import TraceStore


@pytest.fixture
def world() -> MemoryWorld:
    return MemoryWorld()


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return load_config({}, state_dir=str(tmp_path), default_runtime="memory", schedule="external")


@pytest.fixture
async def make_engine(
    config: Config, world: MemoryWorld, tmp_path: Path
) -> AsyncIterator[MakeEngine]:
    """Start engines (closed at the end): `store="memory"` or `"local"` (on the test's
    state dir), over runtimes sharing one world of boxes, as a restarted server would."""
    engines: list[tuple[Engine, TraceStore]] = []

    async def make(
        *, store: str = "memory", runtime: MemoryRuntime | None = None, **settings: object
    ) -> Engine:
        if engines and store == "local":
            # One server at a time writes a state dir: the one before has stopped.
            previous, previous_store = engines.pop()
            await previous.close()
            await previous_store.close()
        cfg = load_config({}, **{**_fields(config), **settings})
        trace_store: TraceStore = (
            LocalStore(tmp_path / "state") if store == "local" else MemoryStore()
        )
        runtime = runtime or MemoryRuntime(server_id=SERVER_ID, world=world)
        engine = Engine(
            cfg,
            trace_store,
            {runtime.name: runtime},
            server_id=SERVER_ID,
            frame_poll_secs=POLL_SECS,
        )
        await engine.start()
        engines.append((engine, trace_store))
        return engine

    yield make
    for engine, trace_store in engines:
        await engine.close()
        await trace_store.close()


def _fields(config: Config) -> dict[str, object]:
    return {
        "state_dir": str(config.state_dir),
        "default_runtime": config.default_runtime,
        "schedule": config.schedule,
    }


@pytest.fixture
async def engine(make_engine: MakeEngine) -> Engine:
    return await make_engine()
