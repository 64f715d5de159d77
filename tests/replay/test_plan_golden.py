"""The plan of every fixture trace against its golden JSON. Regenerate with
HOLM_REGEN_GOLDEN=1 and read the diff: each accepted change needs a reason in its commit."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from replay_kit import REGEN, REPO, read_trace_lines, trace_fixture_files

from holm.replay.plan import plan_fork

GOLDEN = Path(__file__).parent / "golden"


def golden_path(trace_file: Path) -> Path:
    group = trace_file.parent.relative_to(REPO).as_posix().replace("/", "_")
    return GOLDEN / f"{group}__{trace_file.stem}.plan.json"


@pytest.mark.parametrize("trace_file", trace_fixture_files(), ids=lambda p: p.stem)
def test_plan_matches_golden(trace_file: Path) -> None:
    plan = plan_fork(read_trace_lines(trace_file))
    got = msgspec.json.format(msgspec.json.encode(plan), indent=2).decode() + "\n"
    golden = golden_path(trace_file)
    if REGEN:
        golden.write_text(got)
    assert golden.exists(), f"no golden for {trace_file}; run with HOLM_REGEN_GOLDEN=1"
    assert got == golden.read_text()
