"""`holm trace ls` and `holm trace blob`, run as the real `holm` process: the golden traces of
fixtures/traces/ (a fork, an adopted box with a torn line, the server's own trace), and a
real holmd (the in-memory runtime, the local store) whose traces are listed over `--url`
and from its state dir, the two agreeing; a value spilled to a blob by that holmd, read back
with `trace blob`; and the blob references that must be refused."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from e2e_kit import HOLM, TOKEN, Holmd, memory_holmd

from holm.cli.remote import EXIT_CODES
from holm.client import SyncHolmClient
from holm.wire.actions import Click
from holm.wire.entries import FrameSeen
from holm.wire.values import Point

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "traces"
PROCESS_TIMEOUT_S = 60
# Over the spill size (64 KB): the `executed` line refers to a blob instead.
BIG_WORD = "x" * 100_000


def holm(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The `holm` console script, importing this checkout."""
    return subprocess.run(
        [str(HOLM), *args],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), **(env or {})},
        cwd=cwd,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )


def listed(done: subprocess.CompletedProcess[bytes]) -> dict[str, dict[str, Any]]:
    assert done.returncode == 0, done.stderr.decode()
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    return {row["trace"]: row for row in rows}


def whole_lines(path: Path) -> list[dict[str, Any]]:
    """The entries of a trace file as written, without a torn last line."""
    *lines, _torn = path.read_text().split("\n")
    return [json.loads(line) for line in lines]


# Offline: the golden traces


def test_ls_gives_each_golden_trace_its_figures_state_and_origin() -> None:
    traces = listed(holm("trace", "ls", "--json", str(FIXTURES)))
    assert set(traces) == {path.stem for path in FIXTURES.glob("*.jsonl")}
    for name, row in traces.items():
        entries = whole_lines(FIXTURES / f"{name}.jsonl")
        assert row["entries"] == len(entries), name
        assert (row["first_at_ms"], row["last_at_ms"]) == (
            entries[0]["at_ms"],
            entries[-1]["at_ms"],
        ), name
        assert row["frames"] == sum(entry["kind"] == "frame" for entry in entries), name
    fork = traces["fork"]
    assert fork["forked_from"] == {"source": "box_9cf78792a1b2", "up_to": 14}
    assert (fork["state"], fork["reason"], fork["adopted"]) == ("gone", "deleted", False)
    adopted = traces["adopted"]
    assert (adopted["state"], adopted["adopted"], adopted["forked_from"]) == ("ready", True, None)
    # Its last line is torn: left out of the count, and said.
    assert adopted["incomplete"] is True and adopted["runtime"] == "local"
    # The server's own trace records images, no box.
    assert (traces["server"]["runtime"], traces["server"]["state"]) == (None, None)
    assert traces["failed_start"]["state"] == "failed"


def test_ls_as_a_table_says_the_origin_in_words_oldest_first() -> None:
    done = holm("trace", "ls", str(FIXTURES))
    assert done.returncode == 0, done.stderr.decode()
    # Columns are two spaces apart or more; a time has one inside.
    header, *rows = [re.split(r"\s{2,}", line) for line in done.stdout.decode().splitlines()]
    assert header == ["TRACE", "RUNTIME", "FIRST", "LAST", "ENTRIES", "FRAMES", "STATE", "ORIGIN"]
    by_trace = {row[0]: row for row in rows}
    assert by_trace["fork"][-2:] == ["gone (deleted)", "fork of box_9cf78792a1b2 up to 14"]
    assert [by_trace["fork"][i] for i in (1, 4, 5)] == ["docker", "13", "3"]
    assert by_trace["adopted"][-2:] == ["ready; incomplete", "adopted"]
    # The server's trace: no box, so no runtime, state nor origin.
    assert [by_trace["server"][i] for i in (1, 6, 7)] == ["-", "-", "-"]
    firsts = {path.stem: whole_lines(path)[0]["at_ms"] for path in FIXTURES.glob("*.jsonl")}
    assert [row[0] for row in rows] == sorted(firsts, key=firsts.__getitem__)


def test_ls_with_no_dir_reads_holm_state_dir(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    for name in ("fork", "adopted"):
        (tmp_path / "traces" / f"{name}.jsonl").write_bytes(
            (FIXTURES / f"{name}.jsonl").read_bytes()
        )
    traces = listed(holm("trace", "ls", "--json", env={"HOLM_STATE_DIR": str(tmp_path)}))
    assert set(traces) == {"fork", "adopted"}
    # Without HOLM_STATE_DIR, ./var: here there is none.
    done = holm("trace", "ls", cwd=tmp_path)
    assert done.returncode == EXIT_CODES["not_found"]
    assert b"no such folder: var" in done.stderr


def test_ls_and_blob_refuse_wrong_arguments_before_reading_anything() -> None:
    done = holm("trace", "ls", str(FIXTURES), "--url", "http://127.0.0.1:9")
    assert done.returncode == 2 and b"not both" in done.stderr
    done = holm("trace", "ls", "--stats", str(FIXTURES))
    assert done.returncode == 2 and b"No such option '--stats'" in done.stderr
    # Without its REF, `blob` is no box ID to ask a server about.
    done = holm("trace", "blob", "--out", "x.bin")
    assert done.returncode == 2 and b"Usage: holm trace blob [OPTIONS] sha256:HEX|px:HASH" in (
        done.stderr
    )
    done = holm("trace", "ls", str(FIXTURES), "more")
    assert done.returncode == 2 and b"Usage: holm trace ls" in done.stderr


def test_trace_is_a_group_whose_help_says_where_each_command_reads() -> None:
    done = holm("trace", "--help")
    assert done.returncode == 0, done.stderr.decode()
    text = done.stdout.decode()
    commands = text.split("Commands:\n")[1]
    assert {line.split()[0] for line in commands.splitlines() if line.strip()} >= {
        "ls",
        "blob",
        "view",
    }
    # One sentence says it: a DIR offline, else the server the environment names.
    assert "$HOLM_SERVER_URL" in text and "always reads DIR" in " ".join(text.split())
    # A trace file is still the default command's, options before it or after.
    first = holm("trace", "--limit", "1", str(FIXTURES / "spec_example.jsonl"))
    assert first.returncode == 0 and len(first.stdout.splitlines()) == 1


def test_blob_gives_the_png_of_a_frame_hash() -> None:
    recorded = FIXTURES / "recorded"
    frame = next(
        json.loads(line)["frame"]
        for line in (recorded / "browser_form.jsonl").read_text().splitlines()
        if json.loads(line)["kind"] == "frame"
    )
    done = holm("trace", "blob", frame, str(recorded))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == (recorded / "frames" / "browser_form" / f"{frame}.png").read_bytes()
    assert done.stdout.startswith(b"\x89PNG")
    missing = holm("trace", "blob", "px:" + "0" * 40, str(recorded))
    assert missing.returncode == EXIT_CODES["not_found"], missing.stderr.decode()
    # A frame hash is one file name, never a path out of the frames.
    escape = holm("trace", "blob", "px:../../secret", str(recorded))
    assert escape.returncode == EXIT_CODES["bad_request"], escape.stderr.decode()


# A real holmd


server = memory_holmd


def test_ls_over_url_lists_a_box_its_fork_and_a_removed_box_as_the_state_dir_does(
    server: Holmd,
) -> None:
    with SyncHolmClient(server.url, server.token) as client:
        source = client.create_box().id
        client.act(source, [Click(at=Point(x=10, y=20))])
        fork = client.fork(source).box.id
        removed = client.create_box().id
        client.delete_box(removed)
        # Stopped, the boxes record nothing more while they are listed twice.
        for box_id in (source, fork):
            client.stop_box(box_id)
        frames = {box_id: _frames(client, box_id) for box_id in (source, fork, removed)}
    over_url = listed(holm("trace", "ls", "--json", "--url", server.url, "--token", TOKEN))
    assert {source, fork, removed} <= set(over_url)
    assert over_url[source]["forked_from"] is None and over_url[source]["state"] == "stopped"
    assert over_url[fork]["forked_from"] == {"source": source}
    assert over_url[fork]["runtime"] == "memory"
    assert (over_url[removed]["state"], over_url[removed]["reason"]) == ("gone", "deleted")
    assert {box_id: over_url[box_id]["frames"] for box_id in frames} == frames
    assert over_url[source]["frames"] > 0  # the click changed the screen

    # The state dir read offline gives the same rows: one projection both ways.
    assert listed(holm("trace", "ls", "--json", str(server.state_dir))) == over_url

    table = holm("trace", "ls", "--url", server.url, "--token", TOKEN).stdout.decode()
    assert f"fork of {source}" in table


def test_ls_with_a_server_in_the_environment_lists_the_servers_traces(
    server: Holmd, tmp_path: Path
) -> None:
    with SyncHolmClient(server.url, server.token) as client:
        box_id = client.create_box().id
    env = {"HOLM_SERVER_URL": server.url, "HOLM_SERVER_TOKEN": TOKEN}
    # Run where no ./var is: the server named by the environment is what is listed.
    assert box_id in listed(holm("trace", "ls", "--json", env=env, cwd=tmp_path))
    # Options before the word go to it, as before `trace` was a group.
    assert box_id in listed(holm("trace", "--json", "ls", env=env, cwd=tmp_path))
    # A DIR given is read, server or not.
    assert set(listed(holm("trace", "ls", "--json", str(FIXTURES), env=env))) == {
        path.stem for path in FIXTURES.glob("*.jsonl")
    }


def test_ls_over_url_needs_the_token(server: Holmd) -> None:
    done = holm("trace", "ls", "--url", server.url, "--token", "")
    assert done.returncode == EXIT_CODES["denied"], done.stderr.decode()


def _frames(client: SyncHolmClient, box_id: str) -> int:
    """The `frame` entries of a box's trace, as the server serves it."""
    page = client.trace(box_id)
    assert not page.more
    return sum(isinstance(entry, FrameSeen) for entry in page.entries)


def test_blob_writes_the_bytes_of_a_value_the_server_spilled(server: Holmd, tmp_path: Path) -> None:
    with SyncHolmClient(server.url, server.token) as client:
        box_id = client.create_box().id
        ran = client.exec(box_id, ["echo", BIG_WORD])
        client.delete_box(box_id)
    assert ran.stdout == BIG_WORD + "\n"
    stored = whole_lines(server.state_dir / "traces" / f"{box_id}.jsonl")
    (executed,) = [entry for entry in stored if entry["kind"] == "executed"]
    ref = executed["stdout"]["__blob"]

    done = holm("trace", "blob", ref, str(server.state_dir))
    assert done.returncode == 0, done.stderr.decode()
    # The blob holds the value's JSON, byte for byte what its reference counts.
    assert json.loads(done.stdout) == ran.stdout
    assert len(done.stdout) == executed["stdout"]["bytes"]

    out = tmp_path / "stdout.json"
    done = holm("trace", "blob", ref, "-o", str(out), env={"HOLM_STATE_DIR": str(server.state_dir)})
    assert (done.returncode, done.stdout) == (0, b"")
    assert out.read_bytes() == holm("trace", "blob", ref, str(server.state_dir)).stdout


# Refused references


@pytest.mark.parametrize(
    "ref",
    [
        "sha256:../..",
        "sha256:../secret",
        "../secret",
        "/etc/passwd",
        "sha256:" + "A" * 64,  # blobs are named by lowercase hex
        "sha256:" + "a" * 63,
        "sha256:" + "a" * 64 + "/",
        "md5:" + "a" * 32,
        "",
    ],
)
def test_blob_refuses_what_is_not_a_blob_reference(ref: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "blobs" / "aa").mkdir(parents=True)
    (tmp_path / "secret").write_text("not for you")
    (state / "blobs" / "aa" / ("a" * 64)).write_text("a blob")
    done = holm("trace", "blob", ref, str(state))
    assert done.returncode == EXIT_CODES["bad_request"], done.stderr.decode()
    assert done.stdout == b""
    assert b"is not a blob reference (sha256:<64 hex>)" in done.stderr


def test_blob_of_an_unknown_reference_is_not_found(tmp_path: Path) -> None:
    ref = "sha256:" + "b" * 64
    done = holm("trace", "blob", ref, str(tmp_path))
    assert done.returncode == EXIT_CODES["not_found"]
    assert done.stdout == b"" and f"no blob {ref}".encode() in done.stderr
    assert not (tmp_path / "blobs").exists()  # reading made nothing
