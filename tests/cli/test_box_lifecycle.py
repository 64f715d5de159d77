"""`holm new`, `ls`, `box`, `pause`, `resume`, `stop`, `rm`, `runtimes` against a real
holmd with the local runtime: the flags reach the box's spec and placement, states change
as the commands say, and a removed box answers `gone` (exit 6) while its trace stays."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import msgspec
import pytest
from e2e_kit import HOLM, Holmd, RunHolm, RunHolmProcess
from PIL import Image

from holm.cli.remote import EXIT_CODES
from holm.wire.spec import DesktopSpec, Placement, Policy, Spec, spec_digest

pytestmark = pytest.mark.desktop


def test_new_fills_the_spec_and_placement_from_its_flags(
    holm: RunHolm, holmd: Holmd, tmp_path: Path
) -> None:
    created = holm(
        "new",
        "--width", "800",
        "--height", "600",
        "--screens", "2",
        "--features", "wide_fonts,dock",
        "--no-network",
        "--expires", "5m",
        "--idle-timeout", "2m",
        "--json",
    )  # fmt: skip
    assert created.exit_code == 0, created.output
    box = json.loads(created.stdout)
    try:
        spec = Spec(
            desktop=DesktopSpec(width=800, height=600, screens=2, features=["wide_fonts", "dock"]),
            policy=Policy(network=False),
        )
        assert msgspec.convert(box["spec"], Spec) == spec
        assert msgspec.convert(box["placement"], Placement) == Placement(
            runtime="local", expires_after_secs=300, idle_timeout_secs=120
        )
        assert box["spec_digest"] == spec_digest(spec)
        assert (box["state"], box["screens"], box["width"], box["height"]) == (
            "ready",
            2,
            800,
            600,
        )
        assert box["expires_at_ms"] - box["created_at_ms"] == 300_000

        shown = holm("box", box["id"])
        assert shown.exit_code == 0
        fields = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in shown.stdout.splitlines())
        assert fields["id"] == box["id"]
        assert fields["spec_digest"] == spec_digest(spec)
        assert fields["size"] == "800x600"

        second = tmp_path / "second.png"
        assert holm("shot", box["id"], "--screen", "1", "-o", str(second)).exit_code == 0
        with Image.open(second) as image:
            assert image.size == (800, 600)
        third = holm("shot", box["id"], "--screen", "2", "-o", str(tmp_path / "none.png"))
        assert third.exit_code == EXIT_CODES["not_found"]
        assert "no screen 2" in third.stderr
    finally:
        holmd.remove(box["id"])


def test_new_reads_a_spec_file_and_its_flags_win(
    holm: RunHolm, holmd: Holmd, tmp_path: Path
) -> None:
    body = tmp_path / "box.json"
    body.write_text(
        json.dumps(
            {
                "spec": {"desktop": {"width": 1024, "height": 700, "features": []}},
                "placement": {"expires_after_secs": 600},
            }
        )
    )
    created = holm("new", "--spec", str(body), "--height", "640", "--json")
    assert created.exit_code == 0, created.output
    box = json.loads(created.stdout)
    holmd.remove(box["id"])
    assert box["spec"]["desktop"] == {"width": 1024, "height": 640, "features": []}
    assert box["placement"]["expires_after_secs"] == 600


def test_new_refuses_what_the_runtime_cannot_do(holm: RunHolm) -> None:
    refused = holm("new", "--package", "jq")
    assert refused.exit_code == EXIT_CODES["unsupported"] == 4
    assert refused.stderr.startswith("holm: unsupported: ")
    assert refused.stdout == ""
    too_short = holm("new", "--expires", "30s")
    assert too_short.exit_code == EXIT_CODES["bad_request"]
    assert "60" in too_short.stderr


def test_a_box_pauses_resumes_stops_and_resumes_again(
    holm: RunHolm, holm_process: RunHolmProcess, holmd: Holmd, tmp_path: Path
) -> None:
    created = holm_process("new", "--expires", "10m")
    assert created.returncode == 0, created.stderr
    box = created.stdout.decode().strip()
    try:
        for command, state in (
            ("pause", "paused"),
            ("resume", "ready"),
            ("stop", "stopped"),
            ("resume", "ready"),
        ):
            done = holm(command, box)
            assert done.exit_code == 0, done.output
            assert done.stdout == f"{box}\n"
            assert json.loads(holm("box", box, "--json").stdout)["state"] == state
            if state == "paused":
                frozen = holm("shot", box, "-o", str(tmp_path / "paused.png"))
                assert frozen.exit_code == EXIT_CODES["screen_unavailable"], frozen.output
        assert holm("exec", box, "--", "true").exit_code == 0
        lines = holm("trace", box).stdout.splitlines()
        said = [line.split(maxsplit=2)[2] for line in lines]
        assert [s for s in said if s in {"paused", "resumed", "stopped", "started"}] == [
            "paused",
            "resumed",
            "stopped",
            "started",
        ]
    finally:
        holmd.remove(box)


def test_rm_removes_a_box_that_then_answers_gone(
    holm: RunHolm, holm_process: RunHolmProcess
) -> None:
    created = holm_process("new", "--expires", "10m")
    assert created.returncode == 0, created.stderr
    box = created.stdout.decode().strip()
    assert re.fullmatch(r"box_\w+", box)

    listed = holm("ls", "-q")
    assert box in listed.stdout.splitlines()
    table = holm("ls").stdout.splitlines()
    assert table[0].split() == ["ID", "STATE", "RUNTIME", "SCREENS", "SIZE", "CREATED", "EXPIRES"]
    row = next(line.split() for line in table if line.startswith(box))
    assert row[1:5] == ["ready", "local", "1", "1280x800"]

    removed = holm_process("rm", box)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.decode() == f"{box}\n"

    for args in (("box", box), ("mouse", box, "click", "1", "1"), ("rm", box)):
        gone = holm_process(*args)
        assert gone.returncode == EXIT_CODES["gone"] == 6, args
        assert gone.stderr.decode().startswith("holm: gone: ")
    assert box not in holm("ls", "-q").stdout.splitlines()
    # The trace stays after the box, and what reads it works on.
    kept = holm("trace", box)
    assert kept.exit_code == 0
    assert kept.stdout.splitlines()[-1].endswith("deleted")
    forked = holm_process("fork", box)
    assert forked.returncode == 0, forked.stderr
    fork = forked.stdout.decode().strip()
    try:
        assert holm("box", fork, "--json").exit_code == 0
    finally:
        holm("rm", fork)


def test_an_unknown_box_is_not_found(holm: RunHolm) -> None:
    result = holm("box", "box_0000000000000000000000000000dead")
    assert result.exit_code == EXIT_CODES["not_found"] == 5
    assert result.stderr.startswith("holm: not_found: ")


def test_a_wrong_token_is_denied_and_the_flag_beats_the_environment(holm: RunHolm) -> None:
    denied = holm("ls", "--token", "not-the-token")
    assert denied.exit_code == EXIT_CODES["denied"] == 7
    assert holm("ls", env={"HOLM_SERVER_TOKEN": "not-the-token"}).exit_code == 7
    assert holm("ls").exit_code == 0


def test_runtimes_lists_the_local_runtime(holm: RunHolm) -> None:
    table = holm("runtimes")
    assert table.exit_code == 0
    local = next(line for line in table.stdout.splitlines() if line.startswith("local"))
    assert local.split()[1] == "yes"
    assert "pause" in local.split()
    runtimes = json.loads(holm("runtimes", "--json").stdout)
    assert [r["name"] for r in runtimes] == ["local"]
    assert runtimes[0]["can"]["pause"] is True


def test_trace_follow_ends_when_the_box_is_removed(holmd: Holmd) -> None:
    box = holmd.create()
    follower = subprocess.Popen(
        [str(HOLM), "trace", box, "--follow"],
        env={"PATH": "/usr/bin:/bin", **holmd.client_env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert follower.stdout is not None
        first = follower.stdout.readline().decode()
        assert first.endswith("created 1280x800\n")
        holmd.remove(box)
        rest, errors = follower.communicate(timeout=60)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.returncode == 0, errors
    assert rest.decode().splitlines()[-1].endswith("deleted")
