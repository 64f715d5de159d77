"""`holm replay --loose TRACE --box BOX` against a real holmd: the steps that only read run
for real on the box (their outcome is the box's now), the others are served from the
recording and not done again."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from e2e_kit import RunHolm

from holm.cli.remote import EXIT_CODES

pytestmark = pytest.mark.desktop

FOLDER = "/tmp/loose"
FILE = f"{FOLDER}/a.txt"


def test_reads_run_on_the_box_and_the_rest_is_mocked(
    holm: RunHolm, box: str, tmp_path: Path
) -> None:
    steps = [
        {"type": "exec", "what": {"argv": ["mkdir", "-p", FOLDER]}},
        {
            "type": "write_file",
            "what": {"path": FILE, "contents_base64": base64.b64encode(b"hello").decode()},
        },
        {"type": "exec", "what": {"argv": ["cat", FILE]}},
        {"type": "read_file", "path": FILE},
        {"type": "list_files", "path": FOLDER},
    ]
    steps_file = tmp_path / "steps.json"
    steps_file.write_text(json.dumps(steps))
    recorded = holm("batch", box, str(steps_file))
    assert recorded.exit_code == 0, recorded.stderr
    trace = holm("trace", box, "--json")
    recorded_file = tmp_path / "recorded.jsonl"
    recorded_file.write_text(trace.stdout)
    # The file goes: a mocked write must not bring it back, a read run on the box fails.
    removed = holm("exec", box, "--", "rm", FILE)
    assert removed.exit_code == 0, removed.stderr
    before = len(holm("trace", box, "--json").stdout.splitlines())

    result = holm("replay", "--loose", str(recorded_file), "--box", box, "--json")

    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["box"] == box and report["missed"] == []
    served = {s["type"]: s for s in report["matched"] if s["type"] != "exec"}
    assert [(s["type"], s["mocked"]) for s in report["matched"]] == [
        ("exec", True),
        ("write_file", True),
        ("exec", True),
        ("read_file", False),
        ("list_files", False),
    ]
    cat = report["matched"][2]["outcome"]
    assert cat["ok"] and cat["exec"]["stdout"] == "hello"
    read = served["read_file"]
    assert read["expected"]["ok"] and not read["outcome"]["ok"]
    assert read["outcome"]["error"]["code"] == "not_found"
    assert served["list_files"]["outcome"]["ok"]
    assert (report["attempted"], report["ok"]) == (5, 4)
    # Only the two reads reached the box; the write was not done again.
    after = holm("trace", box, "--json").stdout.splitlines()
    ran = [json.loads(line) for line in after[before:]]
    assert [e["action"]["type"] for e in ran if e["kind"] == "acted"] == [
        "read_file",
        "list_files",
    ]
    assert holm("exec", box, "--", "test", "-e", FILE).exit_code == 1
    text = holm("replay", "--loose", str(recorded_file), "--box", box)
    assert f"2 run on box {box}, 0 need a box, 0 missed" in text.stdout
    assert "read_file: refused (" in text.stdout and "ok in the recording" in text.stdout


def test_a_box_that_is_not_there_is_said_before_anything_runs(
    holm: RunHolm, tmp_path: Path
) -> None:
    recorded = Path(__file__).parents[2] / "fixtures" / "traces" / "exec_files.jsonl"

    result = holm("replay", "--loose", str(recorded), "--box", "box_nosuch")

    assert result.exit_code == EXIT_CODES["not_found"]
    assert "box_nosuch" in result.stderr
