"""exec and files against the real agent process."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec
import pytest
from agent_kit import alive
from desktop_kit import list_dir, read_bytes, run, write_bytes

from holm.adapters.agent_desktop import AgentDesktop
from holm.errors import BadRequest, NotFound
from holm.wire import actions as a
from holm.wire import results as r

from .conftest import RunningAgent


async def test_exec_returns_code_and_output(desktop: AgentDesktop, agent: RunningAgent) -> None:
    result = await run(desktop, "sh", "-c", "echo out; echo err >&2; pwd; exit 3")
    assert result == r.ExecResult(code=3, stdout=f"out\n{agent.home}\n", stderr="err\n")
    assert not result.succeeded


async def test_exec_gets_the_box_home_and_a_display(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    result = await run(desktop, "sh", "-c", "echo $HOME; echo $DISPLAY; echo ${PYTHONPATH:-none}")
    home, display, pythonpath = result.stdout.split()
    assert home == str(agent.home)
    assert display.startswith(":")
    assert pythonpath == "none"


async def test_exec_timeout_kills_the_whole_group(desktop: AgentDesktop, tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"
    # The grandchild sleep is in the command's process group; the timeout must end it too.
    script = f"sleep 300 & echo $! > {marker}; wait"
    result = await run(desktop, "sh", "-c", script, timeout_ms=700)
    assert result.timed_out
    assert result.code is None
    pid = int(marker.read_text())
    for _ in range(100):
        if not alive(pid):
            break
        time.sleep(0.02)
    else:
        pytest.fail(f"the grandchild sleep {pid} is still running")


async def test_exec_output_is_capped(desktop: AgentDesktop) -> None:
    result = await run(desktop, "sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x")
    assert result.code == 0
    assert result.truncated
    assert len(result.stdout) == 1024 * 1024


async def test_exec_of_a_missing_program_is_not_found(desktop: AgentDesktop) -> None:
    with pytest.raises(NotFound):
        await run(desktop, "no-such-program-here", timeout_ms=1000)


async def test_an_exec_out_of_its_limits_is_refused_when_decoded(desktop: AgentDesktop) -> None:
    # A Struct made in Python is not checked; its decode is, in the agent as at the server.
    too_long = a.Exec(what=a.ExecWhat(argv=["true"], timeout_ms=a.MAX_EXEC_MS + 1))
    with pytest.raises(msgspec.ValidationError, match="timeout_ms"):
        msgspec.json.decode(msgspec.json.encode(too_long), type=a.Action)
    with pytest.raises(BadRequest, match="timeout_ms"):
        await desktop.act(0, too_long)
    no_argv = b'{"type":"exec","what":{"argv":[]}}'
    with pytest.raises(msgspec.ValidationError, match="argv"):
        msgspec.json.decode(no_argv, type=a.Action)
    longest = a.Exec(what=a.ExecWhat(argv=["true"], timeout_ms=a.MAX_EXEC_MS))
    assert msgspec.json.decode(msgspec.json.encode(longest), type=a.Action) == longest
    assert r.expect(await desktop.act(0, longest), r.ExecResult).succeeded


async def test_files_write_read_list(desktop: AgentDesktop, agent: RunningAgent) -> None:
    await write_bytes(desktop, "notes/deep/a.txt", b"hello\nworld\n")
    assert (agent.home / "notes/deep/a.txt").read_bytes() == b"hello\nworld\n"
    assert await read_bytes(desktop, str(agent.home / "notes/deep/a.txt")) == b"hello\nworld\n"
    listed = await list_dir(desktop, "notes")
    assert [(f.name, f.type) for f in listed] == [("deep", "dir")]
    (entry,) = await list_dir(desktop, "notes/deep")
    assert (entry.name, entry.type, entry.size) == ("a.txt", "file", 12)
    assert entry.path == str(agent.home / "notes/deep/a.txt")


async def test_file_errors_map_to_holm_errors(desktop: AgentDesktop, agent: RunningAgent) -> None:
    with pytest.raises(NotFound):
        await read_bytes(desktop, "/no/such/file")
    with pytest.raises(BadRequest):
        await read_bytes(desktop, str(agent.home))
    with pytest.raises(BadRequest):
        await list_dir(desktop, "/etc/hostname")
    with pytest.raises(BadRequest, match="base64"):
        await desktop.act(0, a.WriteFile(what=a.WriteWhat(path="bad.txt", contents_base64="!")))
    assert not (agent.home / "bad.txt").exists()


async def test_grep_and_glob_say_when_they_are_cut(
    desktop: AgentDesktop, agent: RunningAgent
) -> None:
    for i in range(5):
        await write_bytes(desktop, f"tree/{i}/f{i}.conf", f"key = {i}\nother\nKEY again\n".encode())
    await write_bytes(desktop, "tree/skip.txt", b"key = no\n")

    async def grep(what: a.GrepWhat) -> r.GrepResult:
        return r.expect(await desktop.act(0, a.Grep(what=what)), r.GrepResult)

    async def glob(what: a.GlobWhat) -> r.GlobResult:
        return r.expect(await desktop.act(0, a.Glob(what=what)), r.GlobResult)

    found = await grep(a.GrepWhat(pattern="^key", path=str(agent.home / "tree"), include="*.conf"))
    assert not found.cut
    assert [(m.path.rsplit("/", 1)[1], m.line, m.text) for m in found.matches] == [
        (f"f{i}.conf", 1, f"key = {i}") for i in range(5)
    ]
    found = await grep(
        a.GrepWhat(pattern="^key", path="tree", include="*.conf", ignore_case=True, limit=7)
    )
    assert found.cut and len(found.matches) == 7
    paths = await glob(a.GlobWhat(pattern="**/*.conf", path="tree"))
    assert paths == r.GlobResult(
        paths=sorted(str(agent.home / f"tree/{i}/f{i}.conf") for i in range(5)), cut=False
    )
    paths = await glob(a.GlobWhat(pattern="**/*.conf", path="tree", limit=2))
    assert paths.cut and len(paths.paths) == 2
    with pytest.raises(BadRequest):
        await grep(a.GrepWhat(pattern="(", path="tree", limit=10))


async def test_file_actions_through_act(desktop: AgentDesktop) -> None:
    written = await desktop.act(
        0, a.WriteFile(what=a.WriteWhat(path="act/x.txt", contents_base64="aGk="))
    )
    assert written == r.FileSaved(path="act/x.txt", size=2)
    read = await desktop.act(0, a.ReadFile(path="act/x.txt"))
    assert read == r.FileData(path="act/x.txt", size=2, contents_base64="aGk=")
    ran = await desktop.act(0, a.Exec(what=a.ExecWhat(argv=["cat", "act/x.txt"])))
    assert ran == r.ExecResult(code=0, stdout="hi", stderr="")
