"""`holm replay --loose`, with no box and no server: every fixture of fixtures/traces/ has
each of its steps matched to itself, served from the recording where the step can change
the desktop and reported as needing a box where it only reads it; a run with an edited step
(a trace, or a step list) has that step reported missed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner, Result
from replay_kit import REPO, trace_fixture_files

from holm.cli import main
from holm.events.codec import encode_entry
from holm.events.local import read_trace_file
from holm.wire.actions import Press, Type
from holm.wire.entries import Acted, AppLaunched, Entry, Executed, executed_key

FIXTURES = REPO / "fixtures" / "traces"
RECORDED = FIXTURES / "recorded"


def loose(*args: str) -> tuple[Result, dict[str, Any]]:
    result = CliRunner().invoke(main, ["replay", "--loose", *args, "--json"])
    report = json.loads(result.stdout) if result.stdout.strip() else {}
    return result, report


def agent_steps(entries: list[Entry]) -> list[Entry]:
    """What the trace says the agent did: batch steps, commands, launches outside a batch."""
    return [
        e
        for e in entries
        if e.actor == "agent"
        and (isinstance(e, Acted | Executed) or (isinstance(e, AppLaunched) and e.batch is None))
    ]


@pytest.mark.parametrize("path", trace_fixture_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_fixture_is_served_from_its_recording_with_no_box(path: Path) -> None:
    entries = read_trace_file(path).entries
    steps = agent_steps(entries)

    result, report = loose(str(path))

    matched = report["matched"]
    assert [(s["seq"], s["recorded"]) for s in matched] == [(e.seq, e.seq) for e in steps]
    assert report["missed"] == [] and report["box"] is None
    for step, entry in zip(matched, steps, strict=True):
        if step["mocked"]:
            recorded_ok = entry.ok if isinstance(entry, Acted) else True
            assert step["outcome"]["ok"] is recorded_ok
        else:
            assert step["outcome"] is None and step["expected"] is not None
    mocked = [s for s in matched if s["mocked"]]
    assert report["attempted"] == report["ok"] == len(mocked)
    # Passing needs nothing left to run on a box.
    assert result.exit_code == (0 if len(mocked) == len(matched) else 1), result.stderr


def test_what_runs_on_a_box_and_what_is_mocked_of_every_action() -> None:
    _, report = loose(str(FIXTURES / "every_action.jsonl"))

    by_type: dict[bool, set[str]] = {True: set(), False: set()}
    for step in report["matched"]:
        by_type[step["mocked"]].add(step["type"])
    reads = {
        "wait_still", "await_window", "capture", "cursor", "windows", "apps", "tabs", "look",
        "snapshot", "read", "page_shot", "read_file", "list_files", "grep", "glob", "clipboard",
    }  # fmt: skip
    assert by_type[False] == reads
    # The clipboard is set (mocked) and read (runs); every other step changes the desktop.
    assert by_type[True] == {
        "move", "click", "double_click", "drag", "path", "mouse_down", "mouse_up", "scroll",
        "type", "press", "key_down", "key_up", "wait", "on_window", "launch", "record",
        "clipboard", "open_url", "on_tab", "on_page", "evaluate", "dialog", "on_node", "exec",
        "write_file",
    }  # fmt: skip


def test_a_mocked_command_serves_its_recorded_output() -> None:
    result, report = loose(str(RECORDED / "exec_files.jsonl"))

    assert result.exit_code == 0
    summed = next(s for s in report["matched"] if s["seq"] == 3)
    assert summed["mocked"] and summed["type"] == "exec"
    assert summed["outcome"] == {
        "ok": True,
        "exec": {"code": 0, "stdout": "15\n", "stderr": "", "timed_out": False, "truncated": False},
    }
    (skipped,) = report["skipped"]
    assert skipped["kind"] == "file_written"


def write(path: Path, entries: list[Entry]) -> None:
    path.write_bytes(b"".join(encode_entry(e) for e in entries))


def test_an_edited_command_of_a_run_is_reported_missed(tmp_path: Path) -> None:
    entries = read_trace_file(RECORDED / "exec_files.jsonl").entries
    summed = entries[3]
    assert isinstance(summed, Executed) and "bc" in summed.argv[-1]
    argv = [*summed.argv[:-1], summed.argv[-1].replace("bc", "wc -c")]
    entries[3] = msgspec.structs.replace(
        summed, argv=argv, key=executed_key(argv, summed.timeout_ms)
    )
    edited = tmp_path / "edited.jsonl"
    write(edited, entries)

    result, report = loose(str(RECORDED / "exec_files.jsonl"), "--steps", str(edited))

    assert result.exit_code == 1
    assert [(m["seq"], m["kind"]) for m in report["missed"]] == [(3, "executed")]
    assert report["missed"][0]["key"] == entries[3].key
    assert [s["seq"] for s in report["matched"]] == [2, 4, 5, 7, 8, 9, 10, 11]
    assert all(s["mocked"] for s in report["matched"])
    text = CliRunner().invoke(
        main, ["replay", "--loose", str(RECORDED / "exec_files.jsonl"), "--steps", str(edited)]
    )
    assert "FAILED (loose): 8 of 9 steps matched, 8 mocked, 0 run" in text.stdout
    assert f"missed: seq 3 executed, no unused step of key {entries[3].key}" in text.stdout


def test_a_step_list_is_matched_by_key_in_any_order(tmp_path: Path) -> None:
    entries = read_trace_file(RECORDED / "browser_form.jsonl").entries
    actions = [e.action for e in entries if isinstance(e, Acted)]
    typed = [i for i, a in enumerate(actions) if isinstance(a, Type)]
    # The name typed differently, and the form sent before the second field is typed.
    actions[typed[0]] = Type(text="Grace Hopper")
    actions.append(actions.pop(typed[1]))
    steps = tmp_path / "steps.json"
    steps.write_bytes(msgspec.json.encode(actions))

    result, report = loose(str(RECORDED / "browser_form.jsonl"), "--steps", str(steps))

    assert result.exit_code == 1
    assert [m["seq"] for m in report["missed"]] == [typed[0]]
    assert report["steps"] == len(actions)
    served = {s["seq"]: s for s in report["matched"]}
    # The last step, typed after the rest, still gets the recorded "London".
    london = served[len(actions) - 1]
    assert london["mocked"] and entries[london["recorded"]].action == Type(text="London")
    # Each Tab press takes the next recorded one.
    tab = next(a for a in actions if isinstance(a, Press))
    tabs = [s["recorded"] for s in report["matched"] if actions[s["seq"]] == tab]
    assert tabs == sorted(tabs) and len(set(tabs)) == len(tabs) == 3
    needs_box = [s for s in report["matched"] if s["outcome"] is None]
    assert [s["type"] for s in needs_box] == ["wait_still"] * 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--loose", "--strict"], "--strict cannot go with --loose"),
        (["--loose", "--keep", "--up-to", "3"], "--up-to, --keep cannot go with --loose"),
        (["--box", "box_x"], "--steps and --box go with --loose"),
    ],
)
def test_options_that_do_not_go_together_are_refused(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["replay", str(RECORDED / "exec_files.jsonl"), *args])

    assert result.exit_code == 2
    assert message in result.stderr
