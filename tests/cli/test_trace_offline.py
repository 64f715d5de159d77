"""`holm trace FILE|DIR`, offline, through click's CliRunner: the golden texts of the traces
in fixtures/traces/, `--json` as stored, `--after`/`--limit`, folders and a real state dir
(written by the local store, with a spilled blob), `--stats`, `--follow` on a growing file,
and the errors.

Regenerate the golden texts with HOLM_REGEN_GOLDEN=1 (then read the diff before committing).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner, Result

from holm.cli import main
from holm.cli.remote import EXIT_UNREACHABLE
from holm.errors import ErrorBody
from holm.events.local import LocalStore
from holm.projections import INCOMPLETE_LINE
from holm.wire.actions import NOT_IN_BATCH, Action, Click, OpenUrl
from holm.wire.entries import (
    KINDS,
    Acted,
    BoxCreated,
    BoxDeleted,
    BoxPaused,
    Entry,
    Executed,
    FrameSeen,
    step_key,
)
from holm.wire.spec import Placement, Spec, spec_digest
from holm.wire.values import Point

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "traces"
GOLDEN_TRACES = sorted(FIXTURES.glob("*.jsonl"))
REGEN = os.environ.get("HOLM_REGEN_GOLDEN") == "1"

T0 = 1_790_000_000_000


def holm(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# Golden texts


@pytest.mark.parametrize("path", GOLDEN_TRACES, ids=lambda path: path.stem)
def test_trace_text_is_the_golden_text(path: Path) -> None:
    result = holm("trace", str(path))
    assert result.exit_code == 0, result.stderr
    golden = path.with_suffix(".txt")
    if REGEN:
        golden.write_text(result.stdout)
    assert result.stdout == golden.read_text()


def test_every_golden_trace_has_its_text_and_no_text_is_left_over() -> None:
    assert {p.stem for p in FIXTURES.glob("*.txt")} == {p.stem for p in GOLDEN_TRACES}


def test_the_golden_traces_hold_every_kind_and_every_action() -> None:
    kinds, actions = set(), set()
    for path in GOLDEN_TRACES:
        for line in path.read_bytes().splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # the torn last line of adopted.jsonl
            kinds.add(entry["kind"])
            if entry["kind"] == "acted":
                actions.add(entry["action"]["type"])
    assert kinds == set(KINDS)
    # Every action a batch may hold (the others are never in a trace: NOT_IN_BATCH).
    batched = [cls for cls in Action.__args__ if cls not in NOT_IN_BATCH]
    assert actions == {str(cls.__struct_config__.tag) for cls in batched}


# The text block of trace-and-fork.md ("Read the trace"), which spec_example.jsonl records.
SPEC_TEXT = """\
   0  agent    created 1280x800
   1  agent    screen 0  open_url
   2  agent    screen 0  the screen changed
   3  agent    screen 0 handed to a person
   4  person   screen 0  the screen changed
   5  agent    screen 0 taken back
   6  agent    ran ls /tmp → 0
"""

# Where holm's text differs from the spec's example, on purpose, and why.
ACCEPTED = {
    # An acted line carries a short hint of what the step did (here the URL), so that a
    # reader can tell two open_url lines apart; the spec's example leaves it out.
    "   1  agent    screen 0  open_url": "   1  agent    screen 0  open_url https://example.com",
}


def test_the_spec_example_reads_as_in_the_spec_but_for_accepted_differences() -> None:
    expected = [ACCEPTED.get(line, line) for line in SPEC_TEXT.splitlines()]
    assert holm("trace", str(FIXTURES / "spec_example.jsonl")).stdout.splitlines() == expected


# --json, --after, --limit


def whole_lines(path: Path) -> list[str]:
    """The lines of a file that end in a newline: what a writer finished."""
    *lines, _torn = path.read_text().split("\n")
    return lines


@pytest.mark.parametrize("path", GOLDEN_TRACES, ids=lambda path: path.stem)
def test_json_prints_the_lines_exactly_as_stored(path: Path) -> None:
    result = holm("trace", "--json", str(path))
    assert result.exit_code == 0
    assert result.stdout.splitlines() == whole_lines(path)


def test_json_of_a_torn_trace_says_incomplete_on_stderr_only() -> None:
    result = holm("trace", "--json", str(FIXTURES / "adopted.jsonl"))
    assert all(json.loads(line) for line in result.stdout.splitlines())
    assert "incomplete" in result.stderr


def test_after_and_limit_select_by_seq() -> None:
    path = FIXTURES / "browser_takeover.jsonl"
    text = holm("trace", "--after", "3", "--limit", "2", str(path)).stdout.splitlines()
    assert [int(line.split()[0]) for line in text] == [4, 5]
    raw = holm("trace", "--json", "--after", "3", "--limit", "2", str(path)).stdout
    assert raw.splitlines() == whole_lines(path)[4:6]
    assert holm("trace", "--after", "24", str(path)).stdout == ""
    assert holm("trace", "--limit", "0", str(path)).stdout == ""


# Folders and a state dir


def test_a_folder_prints_every_trace_under_a_header() -> None:
    result = holm("trace", str(FIXTURES))
    assert result.exit_code == 0
    expected = "\n".join(
        f"# {path.stem} ({path})\n" + path.with_suffix(".txt").read_text() for path in GOLDEN_TRACES
    )
    assert result.stdout == expected


def entry_lines(entries: Sequence[object]) -> bytes:
    return b"".join(msgspec.json.encode(entry) + b"\n" for entry in entries)


def box_created(box_id: str, seq: int = 0, at_ms: int = T0) -> BoxCreated:
    return BoxCreated(
        seq=seq,
        at_ms=at_ms,
        actor="agent",
        box_id=box_id,
        runtime="local",
        spec=Spec(),
        placement=Placement(),
        spec_digest=spec_digest(Spec()),
        expires_at_ms=at_ms + 3_600_000,
    )


def acted(seq: int, action: Action, ok: bool = True) -> Acted:
    return Acted(
        seq=seq,
        at_ms=T0 + seq * 100,
        actor="agent",
        screen=0,
        action=action,
        ok=ok,
        key=step_key("acted", {"screen": 0, "action": action}),
        error=None if ok else ErrorBody(code="failed", message="no"),
    )


async def fill_state_dir(state_dir: Path) -> None:
    store = LocalStore(state_dir)
    try:
        await store.append("box_a", [box_created("box_a"), acted(1, OpenUrl(url="https://a"))])
        big = "x" * 100_000  # past the spill size: the line refers to a blob
        executed = Executed(
            seq=0, at_ms=T0, actor="agent", argv=["cat", "big"], code=0, timed_out=False,
            key="k", stdout=big,
        )  # fmt: skip
        await store.append("box_b", [box_created("box_b"), executed])
    finally:
        await store.close()


def test_a_state_dir_written_by_the_local_store(tmp_path: Path) -> None:
    asyncio.run(fill_state_dir(tmp_path))
    traces = tmp_path / "traces"
    result = holm("trace", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (
        f"# box_a ({traces / 'box_a.jsonl'})\n"
        "   0  agent    created 1280x800\n"
        "   1  agent    screen 0  open_url https://a\n"
        "\n"
        f"# box_b ({traces / 'box_b.jsonl'})\n"
        "   0  agent    created 1280x800\n"
        "   1  agent    ran cat big → 0\n"
    )
    raw = holm("trace", "--json", str(traces / "box_b.jsonl")).stdout
    assert raw.splitlines() == whole_lines(traces / "box_b.jsonl")
    assert json.loads(raw.splitlines()[1])["stdout"]["__blob"].startswith("sha256:")


# --stats


def test_stats_as_a_table() -> None:
    result = holm("trace", "--stats", str(FIXTURES / "exec_files.jsonl"))
    assert result.exit_code == 0
    rows = {
        tuple(cell.strip() for cell in line.strip("│ ").split("│"))
        for line in result.stdout.splitlines()
        if line.startswith("│")
    }
    # 3 failures: the command that exited 3, the one that timed out, the refused read_file.
    assert {("entries", "20"), ("frames", "0"), ("failures", "3"), ("executed", "4")} <= rows
    # 805,001 ms from box_created to box_deleted; box_ready twice and box_unreachable by the
    # server, the rest by the agent.
    assert {("duration", "13 min 25 s"), ("by agent", "17"), ("by system", "3")} <= rows


def test_stats_as_json_for_each_trace_of_a_folder() -> None:
    result = holm("trace", "--stats", "--json", str(FIXTURES))
    bodies = [json.loads(line) for line in result.stdout.splitlines()]
    assert [body["trace"] for body in bodies] == [path.stem for path in GOLDEN_TRACES]
    adopted = bodies[[p.stem for p in GOLDEN_TRACES].index("adopted")]
    assert adopted["incomplete"] is True and adopted["entries"] == 9
    takeover = bodies[[p.stem for p in GOLDEN_TRACES].index("browser_takeover")]
    assert takeover["frames"] == 6 and takeover["by_actor"] == {
        "agent": 20,
        "person": 2,
        "system": 3,
    }


# --follow


def test_follow_prints_entries_as_they_land_until_the_box_is_removed(tmp_path: Path) -> None:
    path = tmp_path / "box_f.jsonl"
    first = [box_created("box_f"), acted(1, Click(at=Point(x=1, y=2)))]
    later = [
        FrameSeen(seq=2, at_ms=T0 + 300, actor="agent", screen=0, frame="h", width=1, height=1),
        acted(3, OpenUrl(url="https://b"), ok=False),
        BoxDeleted(seq=4, at_ms=T0 + 500, actor="agent"),
    ]
    path.write_bytes(entry_lines(first))

    def write_the_rest() -> None:
        # Pauses let the follower see the file between writes, half a line included.
        time.sleep(0.3)
        with path.open("ab") as file:
            file.write(entry_lines(later[:1]))
            file.flush()
            time.sleep(0.3)
            line = entry_lines(later[1:2])
            file.write(line[:20])
            file.flush()
            time.sleep(0.3)
            file.write(line[20:] + entry_lines(later[2:]))

    writer = threading.Thread(target=write_the_rest)
    writer.start()
    try:
        # The timeout only ends a run that went wrong; the box's removal ends this one.
        result = holm("trace", "--follow", "--follow-timeout", "60", str(path))
    finally:
        writer.join()
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "   0  agent    created 1280x800",
        "   1  agent    screen 0  click 1,2",
        "   2  agent    screen 0  the screen changed",
        "   3  agent    screen 0  open_url https://b failed: no",
        "   4  agent    deleted",
    ]


def test_follow_as_json_stops_at_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "box_g.jsonl"
    path.write_bytes(entry_lines([box_created("box_g"), acted(1, Click())]))

    def write_more() -> None:
        time.sleep(0.3)
        with path.open("ab") as file:
            file.write(entry_lines([acted(2, Click()), acted(3, Click())]))

    writer = threading.Thread(target=write_more)
    writer.start()
    try:
        result = holm(
            "trace", "--follow", "--json", "--after", "0", "--limit", "2",
            "--follow-timeout", "60", str(path),
        )  # fmt: skip
    finally:
        writer.join()
    assert [json.loads(line)["seq"] for line in result.stdout.splitlines()] == [1, 2]


def test_follow_ends_at_its_timeout_on_a_quiet_file(tmp_path: Path) -> None:
    path = tmp_path / "box_q.jsonl"
    path.write_bytes(entry_lines([box_created("box_q")]))
    result = holm("trace", "-f", "--follow-timeout", "0.3", str(path))
    assert (result.exit_code, result.stdout) == (0, "   0  agent    created 1280x800\n")


# Errors


def test_a_missing_file_is_an_error() -> None:
    result = holm("trace", "no/such/trace.jsonl")
    assert result.exit_code == 5
    assert result.stdout == ""
    assert result.stderr == "holm: not_found: no such file or directory: no/such/trace.jsonl\n"


def test_a_box_id_is_read_from_the_server_named_by_url() -> None:
    # Nothing listens on port 9 of loopback: the box ID went to the server, which is not there.
    result = holm("trace", "box_9cf78792a1b2", "--url", "http://127.0.0.1:9")
    assert result.exit_code == EXIT_UNREACHABLE
    assert "cannot reach holmd" in result.stderr


def test_an_empty_folder_is_an_error(tmp_path: Path) -> None:
    result = holm("trace", str(tmp_path))
    assert result.exit_code == 5 and "no trace files" in result.stderr


def corrupt_trace(path: Path) -> Path:
    """A trace file with a line that is not an entry between two that are."""
    path.write_bytes(
        entry_lines([box_created("b")])
        + b'{"not": "an entry"}\n'
        + entry_lines([acted(2, Click())])
    )
    return path


def test_a_corrupt_line_inside_a_trace_is_an_error(tmp_path: Path) -> None:
    path = corrupt_trace(tmp_path / "bad.jsonl")
    result = holm("trace", str(path))
    assert result.exit_code == 3 and str(path) in result.stderr and "not a trace" in result.stderr


def test_json_refuses_a_file_that_is_no_trace_as_the_text_does(tmp_path: Path) -> None:
    # docs/trace.md: "a file with a line that is not an entry (anywhere but at the torn end)
    # is `bad_request` (3)"; `--json` prints the lines as stored, not whatever lines parse.
    passwd = tmp_path / "passwd.jsonl"
    passwd.write_bytes(b"root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/bin/sh\n")
    for path in (corrupt_trace(tmp_path / "bad.jsonl"), passwd):
        for args in ((), ("--json",)):
            result = holm("trace", str(path), *args)
            assert result.exit_code == 3, (path.name, args)
            assert result.stdout == "", (path.name, args)


def test_with_json_an_error_of_a_file_read_offline_is_the_error_body(tmp_path: Path) -> None:
    # docs/cli.md: errors print `holm: CODE: MESSAGE` on stderr "(with `--json`, the error
    # body `{"code", "message", "retryable"}`)", as they do for a box ID.
    corrupt = corrupt_trace(tmp_path / "bad.jsonl")
    (tmp_path / "empty").mkdir()
    cases = [
        (("trace", "no/such/trace.jsonl"), "not_found"),
        (("trace", str(tmp_path / "empty")), "not_found"),
        (("trace", "ls", str(tmp_path / "none")), "not_found"),
        (("trace", str(corrupt), "--stats"), "bad_request"),
        (("replay", str(corrupt)), "bad_request"),
        (("diff", str(corrupt), str(corrupt)), "bad_request"),
    ]
    for args, code in cases:
        result = holm(*args, "--json")
        assert result.exit_code == {"not_found": 5, "bad_request": 3}[code], args
        assert result.stdout == "", args
        body = msgspec.json.decode(result.stderr, type=ErrorBody)
        assert body.code == code, args


def test_a_file_that_ends_in_lines_that_are_not_entries_is_no_trace(tmp_path: Path) -> None:
    text = tmp_path / "passwd.jsonl"
    text.write_bytes(b"root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/bin/sh\n")
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(entry_lines([box_created("b")]) + b"garbage\n" + b'{"seq": 1')
    for path in (text, damaged):
        result = holm("trace", str(path))
        assert result.exit_code == 3 and str(path) in result.stderr
        assert "last 2 lines are not entries" in result.stderr

    # One line of garbage at the end is what a writer that died can leave: a torn trace.
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(entry_lines([box_created("b")]) + b"\0\0\0\0\n")
    result = holm("trace", str(torn))
    assert result.exit_code == 0 and result.stdout.splitlines()[-1] == INCOMPLETE_LINE


def test_follow_takes_one_file(tmp_path: Path) -> None:
    result = holm("trace", "--follow", str(FIXTURES))
    assert result.exit_code == 2 and "--follow" in result.stderr


def test_incomplete_line_closes_a_torn_trace() -> None:
    lines = holm("trace", str(FIXTURES / "adopted.jsonl")).stdout.splitlines()
    assert lines[-1] == INCOMPLETE_LINE


def test_a_trace_file_whose_front_was_pruned_says_where_it_begins(tmp_path: Path) -> None:
    lines = (FIXTURES / "spec_example.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "box_pruned.jsonl"
    path.write_bytes(b"".join(lines[3:]))
    first = json.loads(lines[3])["seq"]

    printed = holm("trace", str(path)).stdout.splitlines()
    assert (
        printed[0]
        == f"pruned: the trace begins at seq {first}; the {first} entries before it were dropped"
    )
    assert printed[1].lstrip().startswith(str(first))
    # Read from a later seq, or from a whole trace, there is no such line.
    assert not holm("trace", str(path), "--after", str(first)).stdout.startswith("pruned")
    assert not holm("trace", str(FIXTURES / "spec_example.jsonl")).stdout.startswith("pruned")


def keep_created(trace: str, old: Iterable[Entry]) -> Collection[int]:
    return {entry.seq for entry in old if isinstance(entry, BoxCreated)}


def test_a_trace_file_pruned_by_age_says_where_it_begins(tmp_path: Path) -> None:
    async def write_and_prune() -> None:
        store = LocalStore(tmp_path)
        await store.append("box_1", [box_created("box_1", at_ms=1_000)])
        for seq in range(1, 6):
            await store.append("box_1", [BoxPaused(seq=-1, at_ms=1_000 + seq, actor="agent")])
        # Entries before at_ms 1_004 are old: seqs 1 to 3 go, box_created stays.
        await store.prune(1_004 + store.keep_entries_secs * 1000, keep_created)
        await store.close()

    asyncio.run(write_and_prune())
    path = tmp_path / "traces" / "box_1.jsonl"

    printed = holm("trace", str(path)).stdout.splitlines()
    assert printed[0] == (
        "pruned: the trace begins at seq 4; of the 4 entries before it, only those its box's"
        " state is folded from were kept"
    )
    assert [line.split()[0] for line in printed[1:]] == ["0", "4", "5"]
    raw = holm("trace", str(path), "--json")
    assert raw.stderr.startswith(f"holm: {path}: pruned: the trace begins at seq 4;")
    assert [json.loads(line)["seq"] for line in raw.stdout.splitlines()] == [0, 4, 5]
