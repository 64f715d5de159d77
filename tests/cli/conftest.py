"""Fixtures of the CLI's tests: one real holmd for the session and a box for a module
(tests/cli/e2e_kit.py), and `holm` run in-process with click's CliRunner and as a real
subprocess."""

from __future__ import annotations

import subprocess
from pathlib import Path

import e2e_kit
import pytest
from click.testing import CliRunner, Result
from e2e_kit import HOLM, Holmd, RunHolm, RunHolmProcess

from holm.cli import main

# The fixtures both suites share: pytest finds them as names of this module.
holmd = e2e_kit.holmd
box = e2e_kit.box

# What a test waits for a `holm` subprocess at the most (a fork can take a while).
PROCESS_TIMEOUT_S = 240
# The checkout under test, ahead of the installed one: the console script imports `holm`
# from wherever the virtualenv was installed from, which in a second worktree is not here.
CHECKOUT = str(Path(__file__).resolve().parents[2])


@pytest.fixture
def holm(holmd: Holmd) -> RunHolm:
    """`holm ARGS…` in-process, reaching the test server through the environment."""

    def run(
        *args: str, stdin: str | bytes | None = None, env: dict[str, str] | None = None
    ) -> Result:
        runner = CliRunner(env={**holmd.client_env, **(env or {})})
        return runner.invoke(main, list(args), input=stdin, catch_exceptions=False)

    return run


@pytest.fixture
def holm_process(holmd: Holmd) -> RunHolmProcess:
    """`holm ARGS…` as a real subprocess of the installed console script."""

    def run(
        *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [str(HOLM), *args],
            input=stdin,
            capture_output=True,
            env={
                "PATH": "/usr/bin:/bin",
                "PYTHONPATH": CHECKOUT,
                **holmd.client_env,
                **(env or {}),
            },
            timeout=PROCESS_TIMEOUT_S,
            check=False,
        )

    return run
