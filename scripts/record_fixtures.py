"""Record the real traces of fixtures/traces/recorded/ again, with holm itself: an engine in
this process over a memory store and the local runtime drives one box per session, then the
trace is written as JSON lines (`<name>.jsonl`) with the frames it names
(`frames/<name>/<hash>.png`).

    .venv/bin/python scripts/record_fixtures.py [--only NAME] [--display-base 280]

Each session makes what it needs with steps a fork does again (a page is written by an
`exec`, not uploaded), so that a fork or `holm replay --strict` of the fixture reproduces it;
each also has a step a fork cannot do (a file upload, a clipboard set), to show it skipped.
Recording changes box IDs, times and frame hashes: the plan goldens (tests/replay/golden/)
then need `HOLM_REGEN_GOLDEN=1`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from holm.adapters.local.runtime import LocalRuntime  # noqa: E402
from holm.config import load_config  # noqa: E402
from holm.engine import Engine  # noqa: E402
from holm.events import MemoryStore  # noqa: E402
from holm.events.codec import encode_entry  # noqa: E402
from holm.replay.interpreter import record_final_frames  # noqa: E402
from holm.replay.reading import read_whole_trace  # noqa: E402
from holm.wire.actions import (  # noqa: E402
    Action,
    Clipboard,
    Exec,
    ExecWhat,
    Launch,
    OpenUrl,
    Press,
    ReadFile,
    Type,
    WaitStill,
    WriteFile,
    WriteWhat,
)
from holm.wire.api import ActionsRequest  # noqa: E402
from holm.wire.entries import FrameSeen  # noqa: E402
from holm.wire.results import ExecResult, expect  # noqa: E402
from holm.wire.spec import Placement, Spec  # noqa: E402

OUT = REPO / "fixtures" / "traces" / "recorded"

# A form whose layout does not depend on fonts or on where the pointer is; no caret blinks.
FORM = """<!doctype html>
<html><head><title>Order</title><style>
* { caret-color: transparent; }
body { margin: 0; font: 16px sans-serif; background: #f4f4f4; }
label { position: absolute; left: 40px; font: 14px sans-serif; }
input, button { position: absolute; left: 140px; width: 240px; height: 28px; }
#l1 { top: 46px; } #name { top: 40px; }
#l2 { top: 96px; } #city { top: 90px; }
button { top: 140px; }
#out { position: absolute; left: 40px; top: 200px; font: 20px monospace; }
</style></head><body>
<label id="l1" for="name">Name</label><input id="name">
<label id="l2" for="city">City</label><input id="city">
<button onclick="send()">Send</button>
<p id="out"></p>
<script>
function send() {
  const value = (id) => document.getElementById(id).value;
  document.title = out.textContent = `Hello ${value("name")} from ${value("city")}`;
}
</script>
</body></html>"""

Session = Callable[[Engine, str], Awaitable[None]]


def write_argv(path: str, text: str) -> list[str]:
    return ["sh", "-c", f"cat > {path} <<'HOLM_EOF'\n{text}\nHOLM_EOF"]


async def batch(engine: Engine, box: str, *actions: Action) -> None:
    answer = await engine.run_batch(box, 0, ActionsRequest(actions=list(actions)))
    failed = [r for r in answer.results if not r.ok]
    if failed or answer.stopped_at is not None:
        raise SystemExit(f"a step failed while recording: {failed}")


async def run(engine: Engine, box: str, *argv: str) -> ExecResult:
    """A command on its own, as `POST …/exec` runs one: recorded `executed`."""
    action = Exec(what=ExecWhat(argv=list(argv), timeout_ms=10_000))
    return expect(await engine.act(box, 0, action), ExecResult)


async def upload(engine: Engine, box: str, path: str, contents: bytes) -> None:
    """A file written on its own, as `PUT …/files` writes one: recorded `file_written`,
    without its bytes."""
    encoded = base64.b64encode(contents).decode()
    await engine.act(box, 0, WriteFile(what=WriteWhat(path=path, contents_base64=encoded)))


async def browser_form(engine: Engine, box: str) -> None:
    await run(engine, box, *write_argv("/tmp/form.html", FORM))
    # The first navigation of a new Chromium sometimes replaces its blank page and sometimes
    # adds to its history; a second one (to an anchor) makes the back button the same in
    # every run.
    await batch(
        engine,
        box,
        OpenUrl(url="file:///tmp/form.html"),
        OpenUrl(url="file:///tmp/form.html#order"),
        WaitStill(settle_ms=400),
    )
    await asyncio.sleep(0.6)
    # The keyboard, from the address bar that has the focus after open_url: a click into the
    # page right after the navigation sometimes leaves the focus in the address bar.
    await batch(
        engine,
        box,
        Press(chord=["Tab"]),
        Type(text="Ada Lovelace"),
        Press(chord=["Tab"]),
        Type(text="London"),
        WaitStill(settle_ms=300),
    )
    await asyncio.sleep(0.6)
    await batch(engine, box, Press(chord=["Tab"]), Press(chord=["Return"]), WaitStill())
    await asyncio.sleep(0.6)
    # Not done again by a fork: the trace keeps that it happened, not the bytes.
    await upload(engine, box, "/tmp/notes.txt", b"sent\n")


async def xterm_session(engine: Engine, box: str) -> None:
    await batch(engine, box, Launch(app="xterm"), WaitStill(settle_ms=400))
    await asyncio.sleep(0.6)
    # The prompt names nothing of this box, so that another box shows the same screen.
    # Each command ends before the next is typed: typing ahead would mix its echo with the
    # output, differently in every run.
    await batch(
        engine,
        box,
        Type(text="PS1='$ '; clear\n"),
        WaitStill(settle_ms=300),
        Type(text="echo hello from holm\n"),
        WaitStill(settle_ms=300),
        Type(text="seq 3 | tac\n"),
        WaitStill(settle_ms=300),
        Type(text="printf '%s\\n' pear apple fig | sort\n"),
        WaitStill(settle_ms=400),
    )
    await asyncio.sleep(0.6)
    await engine.act(box, 0, Clipboard(selection="clipboard", text="not kept by the trace"))
    await batch(engine, box, Press(chord=["ctrl", "l"]), WaitStill(settle_ms=400))
    await asyncio.sleep(0.6)


async def exec_files(engine: Engine, box: str) -> None:
    await run(engine, box, "sh", "-c", "mkdir -p /tmp/work && cd /tmp/work && seq 5 > n")
    await run(engine, box, "sh", "-c", "cd /tmp/work && paste -sd+ n | bc")
    await run(engine, box, "sha256sum", "/tmp/work/n")
    await run(engine, box, "sh", "-c", "echo 'no such file' >&2; exit 3")
    await run(engine, box, "python3", "-c", "print(sum(range(10)))")
    # A batch makes a file with a command and reads it back; its `write_file` step is kept
    # without its bytes (a fork skips it, as an upload), so nothing after reads that file.
    content = base64.b64encode(b"not kept by the trace\n").decode()
    await batch(
        engine,
        box,
        Exec(what=ExecWhat(argv=["sh", "-c", "echo made by a command > /tmp/work/from-batch.txt"])),
        Exec(what=ExecWhat(argv=["cat", "/tmp/work/from-batch.txt"])),
        WriteFile(what=WriteWhat(path="/tmp/batch-upload.txt", contents_base64=content)),
    )
    await run(engine, box, "ls", "/tmp/work")
    # An upload is not done again by a fork (a later `ls` would differ); reading it back is
    # not a step either.
    await upload(engine, box, "/tmp/work/uploaded.txt", b"up\n")
    await engine.act(box, 0, ReadFile(path="/tmp/work/uploaded.txt"))


SESSIONS: dict[str, Session] = {
    "browser_form": browser_form,
    "xterm_session": xterm_session,
    "exec_files": exec_files,
}


async def record(name: str, session: Session, runtime: LocalRuntime, state_dir: Path) -> None:
    config = load_config({}, state_dir=str(state_dir))
    engine = Engine(config, MemoryStore(), {"local": runtime}, server_id="holm-record")
    try:
        box = (await engine.create_box(Spec(), Placement(expires_after_secs=900))).id
        try:
            await session(engine, box)
            await record_final_frames(engine, box)
            entries = await read_whole_trace(engine, box)
            frames = {e.frame for e in entries if isinstance(e, FrameSeen)}
            pictures = {h: await engine.store.get_frame(box, h) for h in frames}
        finally:
            await engine.delete_box(box)
    finally:
        await engine.close()
    # The removal is not part of the run.
    entries = [e for e in entries if type(e).__name__ != "BoxDeleted"]
    (OUT / f"{name}.jsonl").write_bytes(b"".join(encode_entry(e) for e in entries))
    folder = OUT / "frames" / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for frame_hash, png in pictures.items():
        if png is not None:
            (folder / f"{frame_hash}.png").write_bytes(png)
    print(f"{name}: {len(entries)} entries, {len(frames)} frames")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(SESSIONS))
    parser.add_argument("--display-base", type=int, default=280)
    parser.add_argument("--display-count", type=int, default=20)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    state_dir = Path(tempfile.mkdtemp(prefix="holm-rec-", dir="/tmp"))
    runtime = LocalRuntime(
        state_dir / "boxes",
        "holm-record",
        display_base=args.display_base,
        display_count=args.display_count,
    )
    try:
        for name, session in SESSIONS.items():
            if args.only in (None, name):
                await record(name, session, runtime, state_dir)
    finally:
        await runtime.close()
        shutil.rmtree(state_dir, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
