"""The agent process itself: its socket, its display choice, its process tree, SIGTERM."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest
from agent_kit import alive, start_agent, stop_agent
from desktop_kit import clipboard, cursor, launch, run, windows

from holm.adapters.agent_desktop import AgentDesktop
from holm.errors import Failed, ScreenUnavailable, Unsupported
from holm.wire import actions as a
from holm.wire.values import Point


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                children.setdefault(_ppid(int(entry)), []).append(int(entry))
            except (FileNotFoundError, IndexError):
                continue
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


async def test_two_agents_with_one_base_take_different_displays(tmp_path: Path) -> None:
    first = start_agent(tmp_path / "a", "--no-chromium", "--display-base", "212")
    second = start_agent(tmp_path / "b", "--no-chromium", "--display-base", "212")
    try:
        desktops = [await AgentDesktop.connect(x.socket) for x in (first, second)]
        infos = await asyncio.gather(*(d.ready(30) for d in desktops))
        displays = [info.screens[0].display for info in infos]
        assert displays[0] != displays[1]
        assert all(212 <= int(d.lstrip(":")) < 220 for d in displays)
        # Each agent drives its own display: a move on one is not seen on the other.
        await desktops[0].act(0, a.Move(to=Point(x=11, y=12)))
        await desktops[1].act(0, a.Move(to=Point(x=33, y=44)))
        assert await cursor(desktops[0], 0) == Point(x=11, y=12)
        assert await cursor(desktops[1], 0) == Point(x=33, y=44)
        with pytest.raises(Unsupported):
            await desktops[0].act(0, a.OpenUrl(url="about:blank"))
        with pytest.raises(ScreenUnavailable):
            await desktops[0].act(3, a.Cursor())
        for d in desktops:
            await d.close()
    finally:
        stop_agent(first)
        stop_agent(second)


async def test_sigterm_ends_the_whole_process_tree(tmp_path: Path) -> None:
    running = start_agent(tmp_path, "--no-chromium", "--display-base", "214")
    try:
        mode = stat.S_IMODE(running.socket.stat().st_mode)
        assert mode == 0o600
        desktop = await AgentDesktop.connect(running.socket)
        await desktop.ready(30)
        await launch(desktop, 0, "xterm")
        # A daemon that leaves its parent (new session, parent gone) stays in the agent's
        # tree: the agent is a subreaper.
        spawned = await run(desktop, "sh", "-c", "setsid sleep 300 > /dev/null 2>&1 & echo $!")
        daemon = int(spawned.stdout)
        for _ in range(100):
            if _ppid(daemon) == running.proc.pid:
                break
            await asyncio.sleep(0.02)
        assert _ppid(daemon) == running.proc.pid
        tree = _descendants(running.proc.pid)
        assert daemon in tree and len(tree) >= 4  # Xvfb, openbox, x11vnc, xterm, sleep
        # An orphan that ends is the subreaper's to reap: it does not stay a zombie (the
        # reaper looks only when a child waits to be reaped, so this checks that look).
        brief = await run(desktop, "sh", "-c", "setsid sleep 0.3 > /dev/null 2>&1 & echo $!")
        orphan = Path(f"/proc/{int(brief.stdout)}")
        for _ in range(250):
            if not orphan.exists():
                break
            await asyncio.sleep(0.02)
        assert not orphan.exists(), "an ended orphan was left a zombie"
        await desktop.close()
        assert stop_agent(running) == 0
        assert [pid for pid in tree if alive(pid)] == []
        assert not running.socket.exists()
    finally:
        stop_agent(running)


async def test_a_lost_agent_fails_calls_with_transport(tmp_path: Path) -> None:
    from holm.errors import Transport

    running = start_agent(tmp_path, "--no-chromium", "--display-base", "216")
    try:
        desktop = await AgentDesktop.connect(running.socket)
        await desktop.ready(30)
        call = asyncio.ensure_future(desktop.act(0, a.Wait(ms=20_000)))
        await asyncio.sleep(0.2)
        stop_agent(running)
        with pytest.raises(Transport) as lost:
            await call
        assert lost.value.retryable
        assert not desktop.connected
        with pytest.raises(Transport):
            await desktop.ping()
        await desktop.close()
    finally:
        stop_agent(running)


async def test_ready_names_the_part_that_failed(tmp_path: Path) -> None:
    # A home that is a file: Chromium's profile cannot be made there.
    home = tmp_path / "not-a-dir"
    home.write_text("")
    running = start_agent(
        tmp_path, "--display-base", "217", "--home", str(home), "--width", "800", "--height", "600"
    )
    try:
        desktop = await AgentDesktop.connect(running.socket)
        with pytest.raises(Failed) as failed:
            await desktop.ready(30)
        assert "screen 0: chromium" in failed.value.message
        info = await desktop.info()
        assert not info.ready and info.failure == failed.value.message
        # The rest of the screen is up and usable.
        assert (await desktop.frame_hash(0))[1:] == (800, 600)
        await desktop.close()
    finally:
        stop_agent(running)


def test_the_agent_imports_only_what_a_box_has(tmp_path: Path) -> None:
    """Under Debian's Python, the agent loads no part of holm beyond its own package, the
    base interface, the wire types and the errors."""
    import subprocess

    from agent_kit import SYSTEM_PYTHON, agent_env

    script = (
        "import sys, holm.agent.__main__\n"
        "print(' '.join(m for m in sys.modules if m.startswith('holm')))"
    )
    loaded = subprocess.run(
        [SYSTEM_PYTHON, "-c", script],
        env=agent_env(tmp_path),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "holm.agent.server" in loaded
    # Each module it loads is in what the docker image copies, and nothing more of holm:
    # a change elsewhere (a REST body, a trace entry) builds no new image.
    from holm.adapters.docker.images import _HOLM_ROOT, AGENT_PATHS

    copied = {rel for rel in AGENT_PATHS if not (_HOLM_ROOT / rel).is_dir()} | {
        path.relative_to(_HOLM_ROOT).as_posix()
        for rel in AGENT_PATHS
        if (_HOLM_ROOT / rel).is_dir()
        for path in (_HOLM_ROOT / rel).rglob("*.py")
    }
    needed = set()
    for module in loaded:
        parts = module.split(".")[1:]
        package = _HOLM_ROOT.joinpath(*parts)
        needed.add(
            (package / "__init__.py").relative_to(_HOLM_ROOT).as_posix()
            if package.is_dir()
            else package.with_suffix(".py").relative_to(_HOLM_ROOT).as_posix()
        )
    assert needed <= copied, sorted(needed - copied)
    single_files = {rel for rel in AGENT_PATHS if rel.endswith(".py")}
    assert single_files <= needed, sorted(single_files - needed)


async def test_a_dead_display_answers_screen_unavailable(tmp_path: Path) -> None:
    running = start_agent(tmp_path, "--no-chromium", "--display-base", "218")
    try:
        desktop = await AgentDesktop.connect(running.socket)
        info = await desktop.ready(30)
        number = info.screens[0].display.lstrip(":")
        xvfb = int(Path(f"/tmp/.X{number}-lock").read_text().strip())
        assert _ppid(xvfb) == running.proc.pid
        os.kill(xvfb, 9)
        while alive(xvfb):
            await asyncio.sleep(0.02)
        with pytest.raises(ScreenUnavailable):
            await desktop.frame_hash(0)
        with pytest.raises(ScreenUnavailable):
            await desktop.act(0, a.Click(at=Point(x=5, y=5)))
        with pytest.raises(ScreenUnavailable):
            await windows(desktop, 0)
        with pytest.raises(ScreenUnavailable):
            await clipboard(desktop, 0)
        # What does not need the display still works.
        assert (await run(desktop, "true")).code == 0
        await desktop.close()
    finally:
        stop_agent(running)
