"""The agent's bytecode is written once per server, so that a box's interpreter (its code
read-only, PYTHONDONTWRITEBYTECODE) loads every module of the agent without compiling it
(agent_bytecode.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from holm.adapters.local import agent_bytecode
from holm.adapters.local.runtime import LocalRuntime
from holm.adapters.local.sandbox import AGENT_PYTHON, agent_code_dirs, holm_package_dir


def _compiled_at_import(code: Path) -> list[str]:
    """The modules of the `holm` package in `code` that the boxes' interpreter compiles
    from their source when it imports the agent as a box does (no bytecode written)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": ":".join([str(code), *map(str, agent_code_dirs())]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    imported = subprocess.run(
        [AGENT_PYTHON, "-s", "-v", "-c", "import holm.agent.__main__"],
        env=env,
        # Not this checkout: `-c` imports from the working folder first.
        cwd=code,
        capture_output=True,
        text=True,
        check=True,
    )
    # -v says "# code object from PATH.py" for a module compiled from its source, and
    # "# code object from 'PATH.pyc'" for one loaded as bytecode.
    prefix = f"# code object from {code / 'holm'}"
    return [line for line in imported.stderr.splitlines() if line.startswith(prefix)]


def test_the_agent_loads_as_bytecode_once_its_package_is_compiled(tmp_path: Path) -> None:
    code = tmp_path / "code"
    shutil.copytree(holm_package_dir(), code / "holm", ignore=shutil.ignore_patterns("__pycache__"))
    before = _compiled_at_import(code)
    # The test can tell: the agent imports dozens of holm's modules.
    assert len(before) > 30, before
    thread = agent_bytecode.compile_once(AGENT_PYTHON, code / "holm")
    assert thread is not None
    thread.join()
    assert _compiled_at_import(code) == []
    # Once per folder and process.
    assert agent_bytecode.compile_once(AGENT_PYTHON, code / "holm") is None


def test_a_local_runtime_compiles_the_package_its_boxes_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As in a new holmd: no folder compiled yet by this process.
    monkeypatch.setattr(agent_bytecode, "_started", set())
    LocalRuntime(tmp_path / "boxes", "test")
    assert agent_bytecode.compile_once(AGENT_PYTHON, holm_package_dir()) is None
