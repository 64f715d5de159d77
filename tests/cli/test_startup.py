"""`holm` starts fast because it imports only what the command it runs needs: `holm --help`
no command module, `holm trace FILE.jsonl` no client, no store and no rich, a command that
talks to a server neither aiohttp nor asyncio. Each is a real process of the console
script, whose imports `python -X importtime` lists; the lines `holm --help` prints for
commands it has not imported are those of the commands.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import click
import pytest

from holm.cli import COMMANDS, main

REPO = Path(__file__).resolve().parents[2]
HOLM = Path(sys.executable).with_name("holm")
GOLDEN = REPO / "fixtures" / "traces" / "spec_example.jsonl"
PROCESS_TIMEOUT_S = 60

# What only a command that talks to a server, draws a table or opens a store needs.
HEAVY = ("aiohttp", "rich", "asyncio", "holm.client", "holm.events.local")

# Runs the script named by argv[1] as `python SCRIPT` would, and writes sys.modules at exit.
RUN_AND_LIST_MODULES = """
import atexit, os, runpy, sys
def write() -> None:
    with open(os.environ["MODULES_OUT"], "w") as out:
        out.write("\\n".join(sys.modules))
atexit.register(write)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def imports_of(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """`holm ARGS…` as a process of this checkout, and every module it imported."""
    listing = tmp_path / "modules.txt"
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST_MODULES, str(HOLM), *args],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "MODULES_OUT": str(listing)},
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )
    return done, set(listing.read_text().splitlines())


def test_help_imports_no_command_module_and_lists_every_command(tmp_path: Path) -> None:
    done, modules = imports_of(tmp_path, "--help")
    assert done.returncode == 0, done.stderr
    assert "holm.cli.lazy" in modules  # the listing below is the lazy group's
    assert not {m for m in modules if m.startswith("holm.cli.") and m != "holm.cli.lazy"}
    assert not [m for m in modules if m.startswith(HEAVY)]
    listed = [line.split()[0] for line in done.stdout.split("Commands:\n")[1].splitlines()]
    assert listed == sorted(COMMANDS)


def test_trace_of_a_file_imports_no_client_no_store_and_no_rich(tmp_path: Path) -> None:
    done, modules = imports_of(tmp_path, "trace", str(GOLDEN))
    assert done.returncode == 0, done.stderr
    assert done.stdout == GOLDEN.with_suffix(".txt").read_text()
    assert "holm.cli.trace_cmd" in modules
    assert not [m for m in modules if m.startswith(HEAVY)]
    # What only a box ID, `trace ls` or `trace view` needs.
    assert not {"holm.cli.history", "holm.cli.trace_ls", "holm.projections.trace_html"} & modules


def test_a_command_that_talks_to_a_server_imports_its_client_and_no_event_loop(
    tmp_path: Path,
) -> None:
    # A closed port: the command gets as far as sending, and says nothing answered (14).
    done, modules = imports_of(tmp_path, "ls", "--url", "http://127.0.0.1:9")
    assert done.returncode == 14, done.stderr
    assert {"holm.cli.boxes", "holm.client", "holm.blocking_http"} <= modules
    # Its requests block (holm/blocking_http.py): no aiohttp, no asyncio.
    assert not {"aiohttp", "asyncio"} & modules


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_listed_line_is_the_help_of_the_command_it_names(name: str) -> None:
    module = importlib.import_module(COMMANDS[name].module)
    [command] = [command for command in module.COMMANDS if command.name == name]
    assert COMMANDS[name].short_help == command.get_short_help_str(limit=10**6)
    ctx = click.Context(main)
    assert main.get_command(ctx, name) is command


def test_every_command_of_the_modules_is_listed() -> None:
    for module_name in {where.module for where in COMMANDS.values()}:
        module = importlib.import_module(module_name)
        for command in module.COMMANDS:
            assert command.name in COMMANDS, f"{module_name}: {command.name} is not listed"
            assert COMMANDS[command.name].module == module_name
