"""What `holm` does before it reaches a server: refuse wrong arguments (exit 2) and bad
files (exit 3) without sending anything, and say when no server answers (exit 14).

Every command here points at a port where nothing listens, so a command that sent its
request would exit 14: exit 2 or 3 shows it stopped before."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from holm.cli import main
from holm.cli.remote import EXIT_CODES, EXIT_UNREACHABLE, Remote
from holm.client import SyncHolmClient
from holm.errors import ERRORS_BY_CODE

CLI_MD = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def holm(*args: str, stdin: str | None = None) -> Result:
    env = {"HOLM_SERVER_URL": _closed_url(), "HOLM_SERVER_TOKEN": ""}
    return CliRunner(env=env).invoke(main, list(args), input=stdin, catch_exceptions=False)


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (("mouse", "box_1", "click", "10"), "two numbers"),
        (("mouse", "box_1", "drag", "1", "2", "3"), "X2 Y2, or X1 Y1 X2 Y2"),
        (("mouse", "box_1", "scroll", "5", "5"), "--dy or --dx"),
        (("mouse", "box_1", "click", "1", "2", "--button", "thumb"), "thumb"),
        (("keyboard", "box_1", "press", "ctrl++"), "name each key"),
        (("wait", "box_1"), "MS or --still"),
        (("wait", "box_1", "100", "--still"), "MS or --still"),
        (("wait", "box_1", "40000"), "40000"),
        (("new", "--features", "wide_fonts,sparkles"), "sparkles"),
        (("new", "--expires", "soon"), "duration"),
        (("new", "--screens", "9"), "9"),
        (("clip", "box_1", "--selection", "secondary"), "secondary"),
        (("shot", "box_1", "--scale", "0"), "0"),
        (("exec", "box_1"), "ARGV"),
    ],
)
def test_a_wrong_argument_is_a_usage_error_before_any_request(
    args: tuple[str, ...], complaint: str
) -> None:
    result = holm(*args)
    assert result.exit_code == 2, result.output
    assert complaint in result.stderr
    assert result.stdout == ""


def test_no_server_is_exit_14_with_the_url_in_the_message() -> None:
    result = holm("ls")
    assert result.exit_code == EXIT_UNREACHABLE == 14
    assert result.stderr.startswith("holm: unavailable: cannot reach holmd at http://127.0.0.1:")
    assert result.stdout == ""


def test_with_json_an_error_is_the_error_body_on_stderr() -> None:
    result = holm("box", "box_1", "--json")
    assert result.exit_code == 14
    body = json.loads(result.stderr)
    assert body["code"] == "unavailable"
    assert body["retryable"] is True
    assert result.stdout == ""


def test_url_on_the_command_line_wins_over_the_environment() -> None:
    url = _closed_url()
    result = holm("ls", "--url", url)
    assert result.exit_code == 14
    assert url in result.stderr


@pytest.mark.parametrize("command", ["new", "ls", "trace"])
def test_the_url_option_names_every_place_the_url_comes_from(command: str) -> None:
    # The client reads HOLM_SERVER_ADDR too (rest-api.md: "http://127.0.0.1:8080 unless
    # HOLM_SERVER_ADDR changes it"), so the help says so.
    shown = " ".join(holm(command, "--help").output.split())
    assert "$HOLM_SERVER_URL, else http://$HOLM_SERVER_ADDR, else http://127.0.0.1:8080" in shown


def test_every_error_code_has_its_own_exit_code() -> None:
    assert set(EXIT_CODES) == set(ERRORS_BY_CODE)
    codes = [*EXIT_CODES.values(), EXIT_UNREACHABLE]
    assert len(set(codes)) == len(codes)
    assert not {0, 1, 2} & set(codes)


def test_a_spec_file_that_is_not_a_spec_is_a_bad_request(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"desktop": {"width": 1024, "colour": "blue"}}))
    result = holm("new", "--spec", str(spec))
    assert result.exit_code == EXIT_CODES["bad_request"] == 3
    assert "spec.json" in result.stderr
    assert "colour" in result.stderr


def test_a_batch_file_with_an_unknown_action_is_a_bad_request(tmp_path: Path) -> None:
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps([{"type": "open_url", "url": "about:blank"}, {"type": "fly"}]))
    result = holm("batch", "box_1", str(steps))
    assert result.exit_code == 3
    assert "fly" in result.stderr


def test_a_batch_from_stdin_that_is_not_json_is_a_bad_request() -> None:
    result = holm("batch", "box_1", "-", stdin="click here")
    assert result.exit_code == 3
    assert result.stderr.startswith("holm: bad_request: <stdin>")


def test_a_placement_file_with_an_unknown_key_is_a_bad_request(tmp_path: Path) -> None:
    placement = tmp_path / "placement.json"
    placement.write_text(json.dumps({"expires_after_secs": 600, "zone": "eu"}))
    result = holm("fork", "box_1", "--placement", str(placement))
    assert result.exit_code == 3
    assert "zone" in result.stderr


def test_a_command_reading_from_two_threads_opens_one_client() -> None:
    # `holm diff BOX_A BOX_B` reads both traces at once: a second client would be left open.
    remote = Remote("http://127.0.0.1:9", None, as_json=False)
    barrier = threading.Barrier(8)

    def open_client() -> SyncHolmClient:
        barrier.wait()
        return remote.client

    with ThreadPoolExecutor(8) as pool:
        clients = list(pool.map(lambda _: open_client(), range(8)))
    remote.close()
    assert all(client is clients[0] for client in clients)


def _commands(
    group: click.Group, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command under `group`, each with the words that name it (`("mouse", "click")`)."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


def test_every_command_with_a_screen_takes_it_as_dash_s_as_the_docs_list() -> None:
    # docs/cli.md: "`--screen N` (`-s N`, default 0) picks the screen for the commands that
    # act on one: `open`, …".
    bullet = CLI_MD.read_text().split("- **Screens.**", 1)[1].split("\n- ", 1)[0]
    listed = set(re.findall(r"`([a-z][a-z-]*)`", bullet.split(":", 1)[1]))
    screens = [
        (" ".join(words), param)
        for words, command in _commands(main)
        for param in command.params
        if param.name == "screen"
    ]
    assert {name.split()[0] for name, _ in screens} == listed
    for name, param in screens:
        assert set(param.opts) == {"--screen", "-s"}, name
        assert param.default == 0, name


def test_view_takes_its_screen_as_dash_s() -> None:
    result = holm("view", "box_1", "-s", "1")
    assert result.exit_code == EXIT_UNREACHABLE, result.output


def test_the_help_of_cookies_clear_names_the_option_that_narrows_it() -> None:
    # docs/cli.md: `holm browser cookies clear "$BOX" [--site https://example.org]`; its
    # `--url` is holmd's.
    shown = " ".join(holm("browser", "cookies", "clear", "--help").output.split())
    assert "(all, or those of --site)" in shown


def test_every_command_but_mcp_config_takes_json() -> None:
    # docs/cli.md: "`--json` on every command but `mcp-config` … prints JSON instead".
    without = {
        " ".join(words)
        for words, command in _commands(main)
        if not isinstance(command, click.Group)
        and "--json" not in [opt for param in command.params for opt in param.opts]
    }
    assert without == {"mcp-config"}
