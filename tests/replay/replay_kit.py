"""What the replay tests share: a builder of hand-made traces, and the trace files the plan
goldens run over. Imported by name (pyproject's pytest `pythonpath` lists this folder),
since pytest runs with --import-mode=importlib."""

from __future__ import annotations

import contextlib
import importlib.util
import os
from pathlib import Path
from typing import Any

import msgspec
import trace_kit

from holm.adapters.local.runtime import LocalRuntime
from holm.config import load_config
from holm.engine import Engine
from holm.errors import ErrorBody, HolmError
from holm.events import MemoryStore
from holm.events.local import read_trace_file
from holm.replay.plan import acted_key
from holm.wire.actions import Action, Launch
from holm.wire.entries import (
    Acted,
    Actor,
    AppLaunched,
    BoxCreated,
    BoxReady,
    Entry,
    Executed,
    FrameSeen,
    step_key,
)
from holm.wire.spec import Placement, Spec, spec_digest

REPO = Path(__file__).resolve().parents[2]
REGEN = os.environ.get("HOLM_REGEN_GOLDEN") == "1"


class TraceBuilder(trace_kit.TraceBuilder):
    """Entries as an engine would append them (see trace_kit.TraceBuilder), from a box's
    creation."""

    def created(
        self, spec: Spec | None = None, runtime: str = "local", box_id: str = "box_source"
    ) -> BoxCreated:
        spec = spec or Spec()
        created: BoxCreated = self.add(
            BoxCreated,
            gap_ms=0,
            box_id=box_id,
            runtime=runtime,
            spec=spec,
            placement=Placement(runtime=runtime, expires_after_secs=600),
            spec_digest=spec_digest(spec),
            expires_at_ms=self.now + 600_000,
        )
        self.add(BoxReady, gap_ms=1500)
        return created

    def acted(
        self,
        action: Action,
        *,
        ok: bool = True,
        screen: int = 0,
        batch: str | None = None,
        index: int = 0,
        result: Any = None,
        gap_ms: int = 100,
        actor: Actor = "agent",
    ) -> Acted:
        error = None if ok else ErrorBody(code="failed", message="no such element")
        acted: Acted = self.add(
            Acted,
            gap_ms=gap_ms,
            actor=actor,
            screen=screen,
            action=action,
            ok=ok,
            key=acted_key(screen, action),
            error=error,
            batch=batch,
            index=index,
            result=result,
        )
        if ok and isinstance(action, Launch):
            self.add(
                AppLaunched,
                gap_ms=0,
                screen=screen,
                app=action.app,
                key=step_key("app_launched", {"screen": screen, "app": action.app}),
                args=action.args,
                window="0x400001",
                batch=batch,
            )
        return acted

    def executed(
        self,
        argv: list[str],
        *,
        code: int | None = 0,
        stdout: str = "",
        stderr: str = "",
        timed_out: bool = False,
        gap_ms: int = 100,
    ) -> Executed:
        executed: Executed = self.add(
            Executed,
            gap_ms=gap_ms,
            argv=argv,
            code=code,
            timed_out=timed_out,
            key=step_key("executed", {"argv": argv, "timeout_ms": 10_000}),
            stdout=stdout,
            stderr=stderr,
        )
        return executed

    def frame(
        self, frame_hash: str, *, screen: int = 0, gap_ms: int = 50, actor: Actor = "agent"
    ) -> FrameSeen:
        frame: FrameSeen = self.add(
            FrameSeen,
            gap_ms=gap_ms,
            actor=actor,
            screen=screen,
            frame=frame_hash,
            width=1280,
            height=800,
        )
        return frame

    def jsonl(self) -> bytes:
        return b"".join(msgspec.json.encode(e) + b"\n" for e in self.entries)


def read_trace_lines(path: Path) -> list[Entry]:
    """The whole entries of a JSONL trace, as `holm trace FILE` reads them."""
    return read_trace_file(path).entries


def trace_fixture_files() -> list[Path]:
    """Every trace the plan goldens cover: the hand-written ones of fixtures/traces/, the
    recorded ones, and this folder's own."""
    return sorted(
        [
            *(REPO / "fixtures" / "traces").glob("*.jsonl"),
            *(REPO / "fixtures" / "traces" / "recorded").glob("*.jsonl"),
            *(Path(__file__).parent / "traces").glob("*.jsonl"),
        ]
    )


RECORDED = REPO / "fixtures" / "traces" / "recorded"


async def put_recorded(engine: Engine, name: str) -> str:
    """A recorded fixture in the engine's store, with its frames, as if its box had run
    there (and been removed): a source to fork. Its box ID."""
    entries = read_trace_lines(RECORDED / f"{name}.jsonl")
    source = next(e.box_id for e in entries if isinstance(e, BoxCreated))
    await engine.journal.append(source, entries)
    for frame in {e.frame for e in entries if isinstance(e, FrameSeen)}:
        png = (RECORDED / "frames" / name / f"{frame}.png").read_bytes()
        await engine.store.put_frame(source, frame, png)
    return source


# The X displays these tests may use (the machine is shared).
DISPLAY_BASE = 280
DISPLAY_COUNT = 20


class Desktops:
    """A local runtime on this test's displays, and engines over it, each with its own
    memory store and settings."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.runtime = LocalRuntime(
            state_dir / "boxes",
            "srv_h6test",
            display_base=DISPLAY_BASE,
            display_count=DISPLAY_COUNT,
        )
        self.engines: list[Engine] = []

    def engine(self, **settings: Any) -> Engine:
        config = load_config({}, state_dir=str(self.state_dir), **settings)
        engine = Engine(config, MemoryStore(), {"local": self.runtime}, server_id="srv_h6test")
        self.engines.append(engine)
        return engine

    async def close(self) -> None:
        for engine in self.engines:
            for state in engine.boxes():
                with contextlib.suppress(HolmError):
                    await engine.delete_box(state.id)
            await engine.close()
        await self.runtime.close()


def load_recorder() -> Any:
    """scripts/record_fixtures.py as a module: its pages and sessions serve the tests too."""
    spec = importlib.util.spec_from_file_location(
        "record_fixtures", REPO / "scripts" / "record_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


recorder = load_recorder()
FORM: str = recorder.FORM
write_file_argv = recorder.write_argv
