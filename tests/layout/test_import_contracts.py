"""The import contracts of pyproject.toml catch what they are there for: on a copy of holm
with one deliberately bad import in the agent and one in a route, lint-imports fails, naming
both contracts and both imports, and keeps every other contract."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

# What the two contracts of issue 34 forbid, each written the way a newcomer might.
BAD = {
    "agent/deliberately_bad.py": "from holm.events import MemoryStore\n",
    "http/routes/deliberately_bad.py": "import holm.adapters.local.runtime\n",
}


def test_a_bad_import_in_the_agent_or_a_route_breaks_its_contract(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "holm", tmp_path / "holm", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for path, source in BAD.items():
        (tmp_path / "holm" / path).write_text(source)

    run = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    # The report wraps long contract names: read it as one line.
    report = " ".join(run.stdout.split())
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(r"Contracts: \d+ kept, 2 broken\.", report), report
    assert "holm.agent.deliberately_bad -> holm.events" in report
    assert "holm.http.routes.deliberately_bad -> holm.adapters.local.runtime" in report
    assert "The in-box agent imports only holm.wire and holm.errors" in report
    assert "holm.http does not import holm.adapters" in report
