"""`holm trace export` and `holm trace import` against real holmds: a `.holm` file holds the
trace and exactly the frames and blobs it names; imported into another holmd (its own state
dir), the trace starts `box_created`, `imported`, reads whole (a spilled value included) and
forks there to the same last frame; exported as a pytest file it passes on the run and fails,
naming the step, on a run edited by one step; exported as Playwright it runs against a box
and ends on the same page text."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_kit import HOLM, Holmd, memory_holmd

from holm.client import SyncHolmClient
from holm.errors import Gone
from holm.replay.diff import compare_pngs
from holm.wire.actions import (
    ClickOp,
    FillOp,
    OnPage,
    OpenUrl,
    WaitForOp,
    WaitStill,
)
from holm.wire.archive import pack, unpack
from holm.wire.entries import Executed, FrameSeen, Imported

REPO = Path(__file__).resolve().parents[2]
server = memory_holmd
BIG_WORD = "x" * 100_000


def holm(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(HOLM), *args],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), **env},
        cwd=cwd,
        timeout=300,
        check=False,
    )


def named_in(lines: list[dict[str, object]]) -> tuple[set[str], set[str]]:
    """The frames and the blobs a trace's lines name."""
    frames = {str(line["frame"]) for line in lines if line["kind"] == "frame"}
    blobs: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if "__blob" in value:
                blobs.add(str(value["__blob"]))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for line in lines:
        walk(line)
    return frames, blobs


def zipped_names(data: bytes) -> set[str]:
    with zipfile.ZipFile(io.BytesIO(data)) as zipped:
        return set(zipped.namelist())


def test_a_state_dir_trace_exports_with_exactly_its_blobs_and_frames_and_imports_whole(
    server: Holmd, tmp_path: Path
) -> None:
    with SyncHolmClient(server.url, server.token) as client:
        source = client.create_box().id
        client.act(source, [OpenUrl(url="data:text/html,<title>T</title><p>hi</p>")])
        client.exec(source, ["echo", BIG_WORD])
        client.stop_box(source)
    trace_file = server.state_dir / "traces" / f"{source}.jsonl"
    out = tmp_path / "run.holm"
    done = holm({}, "trace", "export", str(trace_file), "-o", str(out))
    assert done.returncode == 0, done.stderr.decode()
    data = out.read_bytes()
    archive = unpack(data)
    lines = [json.loads(line) for line in archive.lines]
    frames, blobs = named_in(lines)
    assert blobs and frames  # the echo spilled, the page changed the screen
    expected = {"manifest.json", "trace.jsonl"}
    expected |= {f"frames/{f}.png" for f in frames} | {f"blobs/{b[7:]}" for b in blobs}
    assert zipped_names(data) == expected
    assert lines == [json.loads(line) for line in trace_file.read_bytes().splitlines()]

    imported = holm(server.client_env, "trace", "import", str(out), "--json")
    assert imported.returncode == 0, imported.stderr.decode()
    answer = json.loads(imported.stdout)
    assert (answer["source"], answer["entries"], answer["frames"]) == (
        source,
        len(lines),
        len(frames),
    )
    with SyncHolmClient(server.url, server.token) as client:
        entries = client.trace(answer["trace"]).entries
        origin = entries[1]
        assert type(entries[0]).__name__ == "BoxCreated" and isinstance(origin, Imported)
        assert (origin.source, origin.entries) == (source, len(lines))
        (executed,) = [e for e in entries if isinstance(e, Executed)]
        assert executed.stdout == BIG_WORD + "\n"
        # The box never ran here: removed, and its trace stays, as a removed box's does.
        with pytest.raises(Gone, match="imported: its box ran where the trace was exported"):
            client.get_box(answer["trace"])
        for frame in frames:
            assert client.trace_frame(answer["trace"], frame).startswith(b"\x89PNG")
    listed = holm(server.client_env, "trace", answer["trace"])
    assert f"imported from {source}" in listed.stdout.decode()


def test_import_refuses_a_file_that_is_not_one(server: Holmd, tmp_path: Path) -> None:
    bad = tmp_path / "bad.holm"
    bad.write_bytes(b"not a zip")
    done = holm(server.client_env, "trace", "import", str(bad))
    assert done.returncode == 3 and b"not a .holm file" in done.stderr
    # A file beside the manifest that it does not list.
    with SyncHolmClient(server.url, server.token) as client:
        source = client.create_box().id
        client.exec(source, ["echo", "one"])
    good = tmp_path / "good.holm"
    assert holm(server.client_env, "trace", "export", source, "-o", str(good)).returncode == 0
    archive = unpack(good.read_bytes())
    archive.frames["px:extra"] = b"\x89PNG"
    bad.write_bytes(pack(archive))
    done = holm(server.client_env, "trace", "import", str(bad))
    assert done.returncode == 3 and b"not those manifest.json lists" in done.stderr


@pytest.fixture
def other_holmd() -> Iterator[Holmd]:
    """A second holmd with local boxes, its own port and state dir."""
    other = Holmd()
    other.start()
    try:
        yield other
    finally:
        other.close()


def last_frame(client: SyncHolmClient, box_id: str) -> bytes:
    frames = [e for e in client.trace(box_id).entries if isinstance(e, FrameSeen)]
    return client.trace_frame(box_id, frames[-1].frame)


PAGE = "data:text/html,<title>Carry</title><body style='caret-color:transparent'><h1>Carried</h1>"


@pytest.mark.desktop
def test_an_export_imported_into_another_holmd_forks_there_to_the_same_last_frame(
    holmd: Holmd, other_holmd: Holmd, tmp_path: Path
) -> None:
    with SyncHolmClient(holmd.url, holmd.token) as client:
        source = client.create_box().id
        try:
            client.act(source, [OpenUrl(url=PAGE), WaitStill(settle_ms=300)])
            out = tmp_path / "run.holm"
            done = holm(holmd.client_env, "trace", "export", source, "-o", str(out))
            assert done.returncode == 0, done.stderr.decode()
            source_png = last_frame(client, source)
        finally:
            holmd.remove(source)
    names = zipped_names(out.read_bytes())
    frames, blobs = named_in([json.loads(line) for line in unpack(out.read_bytes()).lines])
    assert names == {"manifest.json", "trace.jsonl"} | {f"frames/{f}.png" for f in frames}
    assert not blobs
    imported = holm(other_holmd.client_env, "trace", "import", str(out))
    assert imported.returncode == 0, imported.stderr.decode()
    trace = imported.stdout.decode().strip()
    with SyncHolmClient(other_holmd.url, other_holmd.token) as client:
        fork = client.fork(trace)
        assert fork.box.state == "ready" and fork.replay.ok == fork.replay.attempted == 2
        forked_png = last_frame(client, fork.box.id)
    # Frame hashes are keyed per server: the pixels are what must agree.
    assert compare_pngs(source_png, forked_png) == (0.0, None)


def edit_stdout(data: bytes, old: str, new: str) -> bytes:
    """The same .holm file, one command's recorded output changed."""
    archive = unpack(data)
    archive.lines = [
        line.replace(json.dumps(old).encode(), json.dumps(new).encode()) for line in archive.lines
    ]
    return pack(archive)


@pytest.mark.desktop
def test_the_pytest_export_passes_on_its_run_and_fails_naming_an_edited_step(
    holmd: Holmd, tmp_path: Path
) -> None:
    with SyncHolmClient(holmd.url, holmd.token) as client:
        source = client.create_box().id
        try:
            client.exec(source, ["echo", "one"])
            client.exec(source, ["sh", "-c", "echo two"])
            edited_seq = client.trace(source).entries[-1].seq
            test_file = tmp_path / "test_run.py"
            done = holm(
                holmd.client_env, "trace", "export", source, "--as", "pytest", "-o", str(test_file)
            )
            assert done.returncode == 0, done.stderr.decode()
        finally:
            holmd.remove(source)
    holm_file = tmp_path / "test_run.holm"
    assert holm_file.is_file()

    def pytest_of(folder: Path) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
            capture_output=True,
            cwd=folder,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
            timeout=600,
            check=False,
        )

    passed = pytest_of(tmp_path)
    assert passed.returncode == 0, passed.stdout.decode()[-3000:]
    holm_file.write_bytes(edit_stdout(holm_file.read_bytes(), "two\n", "zwei\n"))
    failed = pytest_of(tmp_path)
    assert failed.returncode == 1, failed.stdout.decode()[-3000:]
    assert f"diverged at seq {edited_seq} (executed: exec)" in failed.stdout.decode()


FORM = (
    "data:text/html,<title>Form</title><label>Name <input id=n></label>"
    "<button onclick=\"document.getElementById('o').textContent='Hello '+"
    "document.getElementById('n').value\">Send</button><p id=o>waiting</p>"
)


@pytest.mark.desktop
def test_the_playwright_export_ends_on_the_same_page_text(holmd: Holmd, tmp_path: Path) -> None:
    steps = [
        OpenUrl(url=FORM),
        OnPage(what=WaitForOp(query="Send")),
        OnPage(what=FillOp(query="Name", text="Ada")),
        OnPage(what=ClickOp(query="Send")),
        OnPage(what=WaitForOp(query="Hello Ada")),
    ]
    with SyncHolmClient(holmd.url, holmd.token) as client:
        source = client.create_box().id
        target = client.create_box().id
        try:
            done = client.act(source, steps)
            assert all(step.ok for step in done.results), done.results
            recorded = client.read_page(source, format="text").text
            script = tmp_path / "run.py"
            exported = holm(
                holmd.client_env, "trace", "export", source, "--as", "playwright", "-o", str(script)
            )
            assert exported.returncode == 0, exported.stderr.decode()
            address = client.devtools(target).url
            ran = subprocess.run(
                [sys.executable, str(script), address],
                capture_output=True,
                env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
                timeout=120,
                check=False,
            )
            assert ran.returncode == 0, ran.stderr.decode()[-3000:]
            assert "Hello Ada" in recorded
            assert ran.stdout.decode().split() == recorded.split()
            assert client.read_page(target, format="text").text.split() == recorded.split()
        finally:
            holmd.remove(source, target)
