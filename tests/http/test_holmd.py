"""`holmd` itself, as a process: it listens on HOLM_SERVER_ADDR with the settings of its
environment, stops cleanly on SIGTERM, and refuses a malformed setting; `--help` lists the
settings of docs/server.md, and any other argument is refused before anything starts."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kits.holmd import Holmd, free_port

HOLMD = Path(sys.executable).parent / "holmd"


@pytest.fixture
def state_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="h5a-d-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def get(url: str, token: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_holmd_serves_until_sigterm(state_dir: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [str(HOLMD)], env=_holmd_env(state_dir, port), stderr=subprocess.PIPE
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                status, body = get(f"{base}/v1/health")
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.05)
        assert (status, body) == (200, b'{"ok":true,"service":"holm-server"}')
        assert get(f"{base}/v1/boxes")[0] == 401
        status, body = get(f"{base}/v1/runtimes", token="t0ken")
        assert status == 200 and b'"name":"local"' in body
        assert (state_dir / "server-id").read_text().startswith("srv_")
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr.decode()


def test_holmd_refuses_a_malformed_setting(state_dir: Path) -> None:
    env = {**os.environ, "HOLM_STATE_DIR": str(state_dir), "HOLM_SERVER_REAP_SECS": "often"}
    done = subprocess.run([str(HOLMD)], env=env, capture_output=True, timeout=30)
    assert done.returncode == 2
    assert b"bad setting" in done.stderr and b"reap_secs" in done.stderr


def _settings_in_docs() -> set[str]:
    """The variables of docs/server.md's table of settings."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "server.md").read_text()
    table = text.split("## Settings", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`((?:HOLM|CRON)_[A-Z_]+)`", table.split("A malformed value")[0]))


def test_holmd_help_lists_every_setting_and_starts_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {**os.environ, "HOLM_STATE_DIR": str(state)}
    done = subprocess.run([str(HOLMD), "--help"], env=env, capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr.decode()
    listed = set(re.findall(r"^  ((?:HOLM|CRON)_[A-Z_]+) ", done.stdout.decode(), re.M))
    assert listed == _settings_in_docs()
    assert "HOLM_SERVER_ADDR           127.0.0.1:8080" in done.stdout.decode()
    assert not state.exists()


@pytest.mark.parametrize("args", [["--port", "9000"], ["--help", "extra"], ["serve"]])
def test_holmd_refuses_arguments_without_starting(tmp_path: Path, args: list[str]) -> None:
    state = tmp_path / "state"
    env = {**os.environ, "HOLM_STATE_DIR": str(state)}
    done = subprocess.run([str(HOLMD), *args], env=env, capture_output=True, timeout=30)
    assert done.returncode == 2
    assert b"takes no arguments" in done.stderr and b"holmd --help" in done.stderr
    assert not state.exists()


AUTOGROUPS = Path("/proc/sys/kernel/sched_autogroup_enabled")

# A session of its own that reads its group's nice, runs holmd inside it (holmd does not
# lead that session, as when started from a shell), reads it again while holmd serves and
# once more after holmd has stopped. It prints the three.
IN_A_SHELL = """
import os, signal, subprocess, sys, time, urllib.request
def nice():
    return open("/proc/self/autogroup").read().split()[-1]
seen = [nice()]
holmd = subprocess.Popen([sys.argv[1]], stderr=subprocess.DEVNULL)
for _ in range(400):
    try:
        urllib.request.urlopen(sys.argv[2] + "/v1/health", timeout=5)
        break
    except OSError:
        time.sleep(0.05)
seen.append(nice())
holmd.send_signal(signal.SIGTERM)
holmd.wait(timeout=30)
seen.append(nice())
print(" ".join(seen))
"""


def _holmd_env(state_dir: Path, port: int) -> dict[str, str]:
    return {
        **os.environ,
        "HOLM_SERVER_ADDR": f"127.0.0.1:{port}",
        "HOLM_STATE_DIR": str(state_dir),
        "HOLM_STORAGE_BACKEND": "local",
        "HOLM_SERVER_TOKEN": "t0ken",
    }


@pytest.fixture
def autogroups() -> None:
    if not AUTOGROUPS.exists() or AUTOGROUPS.read_text().strip() != "1":
        pytest.skip("the kernel's autogroups are off here: nice alone orders holmd and boxes")


@pytest.mark.usefixtures("autogroups")
def test_holmd_leading_its_session_weighs_its_group_above_the_boxes() -> None:
    holmd = Holmd(runtime="memory")  # its own session, as under systemd
    holmd.start()
    try:
        group = Path(f"/proc/{holmd.pid}/autogroup").read_text().split()
        assert group[-2:] == ["nice", "-15"]
    finally:
        holmd.close()


@pytest.mark.usefixtures("autogroups")
def test_holmd_started_from_a_shell_gives_its_session_back_its_nice(state_dir: Path) -> None:
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-c", IN_A_SHELL, str(HOLMD), f"http://127.0.0.1:{port}"],
        env=_holmd_env(state_dir, port),
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "-15", "0"]
