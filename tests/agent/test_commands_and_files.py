"""exec and files against the real agent process."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from holm.adapters.agent import AgentDesktop
from holm.errors import BadRequest, NotFound
from holm.wire import actions as a

from .conftest import RunningAgent


async def test_exec_returns_code_and_output(desktop: AgentDesktop, agent: RunningAgent) -> None:
    result = await desktop.exec(["sh", "-c", "echo out; echo err >&2; pwd; exit 3"], 5000)
    assert result.code == 3
    assert result.stdout == f"out\n{agent.home}\n"
    assert result.stderr == "err\n"
    assert not result.timed_out and not result.truncated


async def test_exec_gets_the_box_home_and_a_display(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    result = await desktop.exec(
        ["sh", "-c", "echo $HOME; echo $DISPLAY; echo ${PYTHONPATH:-none}"], 5000
    )
    home, display, pythonpath = result.stdout.split()
    assert home == str(agent.home)
    assert display.startswith(":")
    assert pythonpath == "none"


async def test_exec_timeout_kills_the_whole_group(desktop: AgentDesktop, tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"
    # The grandchild sleep is in the command's process group; the timeout must end it too.
    script = f"sleep 300 & echo $! > {marker}; wait"
    result = await desktop.exec(["sh", "-c", script], 700)
    assert result.timed_out
    assert result.code is None
    pid = int(marker.read_text())
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            break
        time.sleep(0.02)
    else:
        pytest.fail(f"the grandchild sleep {pid} is still running")


async def test_exec_output_is_capped(desktop: AgentDesktop) -> None:
    result = await desktop.exec(["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x"], 10000)
    assert result.code == 0
    assert result.truncated
    assert len(result.stdout) == 1024 * 1024


async def test_exec_of_a_missing_program_is_not_found(desktop: AgentDesktop) -> None:
    with pytest.raises(NotFound):
        await desktop.exec(["no-such-program-here"], 1000)
    with pytest.raises(BadRequest):
        await desktop.exec(["true"], 11 * 60 * 1000)


async def test_files_write_read_list(desktop: AgentDesktop, agent: RunningAgent) -> None:
    await desktop.write_file("notes/deep/a.txt", b"hello\nworld\n")
    assert (agent.home / "notes/deep/a.txt").read_bytes() == b"hello\nworld\n"
    assert await desktop.read_file(str(agent.home / "notes/deep/a.txt")) == b"hello\nworld\n"
    listed = await desktop.list_files("notes")
    assert [(f.name, f.type) for f in listed] == [("deep", "dir")]
    (entry,) = await desktop.list_files("notes/deep")
    assert (entry.name, entry.type, entry.size) == ("a.txt", "file", 12)
    assert entry.path == str(agent.home / "notes/deep/a.txt")


async def test_file_errors_map_to_holm_errors(desktop: AgentDesktop, agent: RunningAgent) -> None:
    with pytest.raises(NotFound):
        await desktop.read_file("/no/such/file")
    with pytest.raises(BadRequest):
        await desktop.read_file(str(agent.home))
    with pytest.raises(BadRequest):
        await desktop.list_files("/etc/hostname")


async def test_grep_and_glob_say_when_they_are_cut(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    for i in range(5):
        await desktop.write_file(f"tree/{i}/f{i}.conf", f"key = {i}\nother\nKEY again\n".encode())
    await desktop.write_file("tree/skip.txt", b"key = no\n")
    matches, cut = await desktop.grep("^key", str(agent.home / "tree"), "*.conf", False, 100)
    assert not cut
    assert [(m.path.rsplit("/", 1)[1], m.line, m.text) for m in matches] == [
        (f"f{i}.conf", 1, f"key = {i}") for i in range(5)
    ]
    matches, cut = await desktop.grep("^key", "tree", "*.conf", True, 7)
    assert cut and len(matches) == 7
    paths, cut = await desktop.glob("**/*.conf", "tree", 100)
    assert not cut
    assert paths == sorted(str(agent.home / f"tree/{i}/f{i}.conf") for i in range(5))
    paths, cut = await desktop.glob("**/*.conf", "tree", 2)
    assert cut and len(paths) == 2
    with pytest.raises(BadRequest):
        await desktop.grep("(", "tree", None, False, 10)


async def test_file_actions_through_act(desktop: AgentDesktop) -> None:
    written = await desktop.act(
        0, a.WriteFile(what=a.WriteWhat(path="act/x.txt", contents_base64="aGk="))
    )
    assert written == {"path": "act/x.txt", "size": 2}
    read = await desktop.act(0, a.ReadFile(path="act/x.txt"))
    assert read["contents_base64"] == "aGk="
    ran = await desktop.act(0, a.Exec(what=a.ExecWhat(argv=["cat", "act/x.txt"])))
    assert ran["stdout"] == "hi" and ran["code"] == 0
