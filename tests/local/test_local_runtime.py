"""The local runtime against real boxes: bubblewrap, the in-box agent, Xvfb, openbox,
x11vnc and Chromium on this machine."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
from desktop_kit import launch, read_bytes, run, windows, write_bytes
from kits.net import hi_server, served_host

from holm.adapters import refusals
from holm.adapters.base import Desktop
from holm.adapters.local import procs
from holm.adapters.local import runtime as runtime_module
from holm.adapters.local.box_ids import range_of
from holm.adapters.local.priority import BOX_NICE
from holm.adapters.local.records import BoxPaths, BoxRecord, read_record, write_record
from holm.adapters.local.runtime import LocalRuntime
from holm.adapters.local.sandbox import Launched, SandboxPlan, bwrap_argv
from holm.config import load_config
from holm.engine import Engine
from holm.errors import (
    BadRequest,
    NotFound,
    Timeout,
    Unavailable,
    Unsupported,
)
from holm.events import MemoryStore
from holm.wire.spec import DesktopSpec, Placement, Policy, Spec

from .conftest import DISPLAY_BASE, DISPLAY_COUNT, MakeRuntime, wait_for

pytestmark = pytest.mark.desktop


def new_id() -> str:
    return f"box_{uuid.uuid4().hex[:12]}"


def spec(*, screens: int = 1, network: bool = False, **desktop: object) -> Spec:
    return Spec(
        desktop=DesktopSpec(screens=screens, **desktop),  # type: ignore[arg-type]
        policy=Policy(network=network),
    )


def record_of(runtime: LocalRuntime, box_id: str) -> BoxRecord:
    record = read_record(BoxPaths(runtime.boxes_dir, box_id).record)
    assert record is not None
    return record


def box_pids(runtime: LocalRuntime, box_id: str) -> list[int]:
    record = record_of(runtime, box_id)
    assert record.init_pid is not None and record.init_start is not None
    return procs.tree(record.init_pid, record.init_start)


def commands_in_box(runtime: LocalRuntime, box_id: str) -> list[str]:
    names = []
    for pid in box_pids(runtime, box_id):
        with contextlib.suppress(FileNotFoundError):
            names.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
    return names


def all_ended(pids: list[int]) -> bool:
    """Whether none of `pids` runs (a zombie waiting for its parent counts as ended)."""
    stats = [procs.read_stat(pid) for pid in pids]
    return all(stat is None or stat.state in procs.DEAD_STATES for stat in stats)


async def states(runtime: LocalRuntime) -> dict[str, str]:
    return {box.box_id: box.state for box in await runtime.list()}


async def shell(desktop: Desktop, script: str) -> str:
    result = await run(desktop, "sh", "-c", script, timeout_ms=20_000)
    assert result.code == 0, result
    return result.stdout


# Bringing boxes up


async def test_a_two_screen_box_is_ready_with_chromium_on_each_screen(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime()
    box_id = new_id()
    started = await runtime.create(box_id, spec(screens=2, width=1024, height=640), Placement())

    assert len(started.viewer_urls) == 2
    for url in started.viewer_urls:
        assert url.startswith("unix:") and Path(url.removeprefix("unix:")).exists()
    desktop = await runtime.desktop(box_id)
    for screen in range(2):
        classes = [w.class_.lower() for w in await windows(desktop, screen)]
        assert "chromium" in classes, classes
        frame = await desktop.frame(screen)
        assert (frame.width, frame.height) == (1024, 640)
    assert await states(runtime) == {box_id: "running"}
    assert await runtime.desktop(box_id) is desktop


async def test_a_box_has_the_canonical_default_size(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime()
    box_id = new_id()
    started = await runtime.create(box_id, Spec(), Placement())
    desktop = await runtime.desktop(box_id)
    assert "chromium" in [w.class_.lower() for w in await windows(desktop, 0)]
    _, width, height = await desktop.frame_hash(0)
    assert (width, height) == (1280, 800)
    listed = await runtime.list()
    # The spec as it was asked for, so that a server that lost the box can launch it again.
    assert listed[0].spec == Spec() and listed[0].server_id == "test-server"
    # And where its desktop answers, for a server that adopts it without its trace.
    assert (listed[0].viewer_urls, listed[0].devtools_url) == (
        started.viewer_urls,
        started.devtools_url,
    )
    assert started.devtools_url is not None and len(started.viewer_urls) == 1

    # A lost connection is made again.
    await desktop.close()
    again = await runtime.desktop(box_id)
    assert again is not desktop and (await run(again, "true")).code == 0


async def test_a_feature_wayland_lacks_is_refused_by_name(
    make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # None is lacking today (`can().wayland_without` is empty); one that some day is, is
    # refused by name before a box starts (holm/adapters/refusals.py).
    monkeypatch.setattr(refusals, "WAYLAND_WITHOUT", ("dock",))
    runtime = make_runtime(chromium=False)
    with pytest.raises(Unsupported, match="wayland desktops have no dock"):
        await runtime.create(new_id(), spec(server="wayland"), Placement())
    assert await runtime.list() == []


async def test_what_the_local_runtime_cannot_do_is_refused(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime(chromium=False)
    with pytest.raises(Unsupported, match="cannot install packages"):
        await runtime.create(new_id(), spec(packages=["jq"]), Placement())
    with pytest.raises(BadRequest):
        await runtime.create(new_id(), spec(screens=9), Placement())
    with pytest.raises(BadRequest):
        await runtime.create("../escape", Spec(), Placement())
    with pytest.raises(BadRequest):
        await runtime.create(new_id(), Spec(), Placement(memory="lots"))
    with pytest.raises(Unsupported, match="browser profile"):
        await runtime.create(new_id(), Spec(), Placement(profile="work"))
    assert await runtime.list() == []
    assert not runtime.can().packages and runtime.can().max_screens == 8
    assert not runtime.can().profile
    assert runtime.can().wayland and runtime.can().wayland_without == []
    # Its boxes' pages are driven through DevTools (docs/runtimes.md), as `can` says;
    # without Chromium (as here) there are none.
    assert not runtime.can().pages and make_runtime().can().pages


async def test_the_engine_refuses_a_profile_on_the_local_runtime_before_recording(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    runtime = make_runtime(chromium=False)
    config = load_config({}, state_dir=str(tmp_path), default_runtime="local")
    engine = Engine(config, MemoryStore(), {"local": runtime}, server_id="srv_test")
    with pytest.raises(Unsupported, match="browser profile") as refused:
        await engine.create_box(Spec(), Placement(profile="work"))
    assert refused.value.code == "unsupported"
    assert await engine.store.traces() == [] and await runtime.list() == []


def agent_replaced_by(
    monkeypatch: pytest.MonkeyPatch, command: list[str], seen: list[list[str]]
) -> None:
    """Start `command` in the box's sandbox in place of the agent."""

    def argv(plan: SandboxPlan, _: object = None) -> list[str]:
        full = bwrap_argv(plan, command)
        seen.append(full)
        return full

    monkeypatch.setattr(runtime_module, "bwrap_argv", argv)


async def test_a_box_whose_agent_ends_at_once_is_refused_with_its_log(
    make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(chromium=False)
    seen: list[list[str]] = []
    agent_replaced_by(monkeypatch, ["sh", "-c", "echo the agent broke; exit 3"], seen)
    box_id = new_id()
    with pytest.raises(Unavailable, match="the agent broke"):
        await runtime.create(box_id, Spec(), Placement(memory="256m"))
    assert seen and not BoxPaths(runtime.boxes_dir, box_id).dir.exists()
    assert await runtime.list() == []
    assert not (runtime.cgroups.parents["memory"] / box_id).exists()


async def test_a_sandbox_that_cannot_start_leaves_no_folder_and_no_cgroup(
    make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(chromium=False)

    def broken(plan: SandboxPlan, command: object = None) -> list[str]:
        return ["bwrap", "--no-such-option", *bwrap_argv(plan)[1:]]

    monkeypatch.setattr(runtime_module, "bwrap_argv", broken)
    box_id = new_id()
    with pytest.raises(Unavailable, match="no-such-option"):
        await runtime.create(box_id, Spec(), Placement(memory="256m", cpus="1"))
    assert not BoxPaths(runtime.boxes_dir, box_id).dir.exists()
    for parent in runtime.cgroups.parents.values():
        assert not (parent / box_id).exists()


@pytest.mark.parametrize("network", [False, True])
async def test_a_box_whose_bwrap_fails_is_refused_with_bwraps_own_error_first(
    make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch, network: bool
) -> None:
    # As on a host where the box's bwrap cannot mount what it must (/proc in a container):
    # it dies while its namespace is being joined, and what fails next (nsenter into it,
    # a write to its pipe) is only the side effect.
    runtime = make_runtime(chromium=False)
    missing = f"/nonexistent-{uuid.uuid4().hex}"

    def failing(plan: SandboxPlan, command: object = None) -> list[str]:
        argv = bwrap_argv(plan)
        at = argv.index("--proc")
        return [*argv[:at], "--ro-bind", missing, "/mnt", *argv[at:]]

    monkeypatch.setattr(runtime_module, "bwrap_argv", failing)
    box_id = new_id()
    with pytest.raises(Unavailable) as refused:
        await runtime.create(box_id, spec(network=network), Placement())
    assert refused.value.message.startswith(f"bwrap: Can't find source path {missing}"), (
        refused.value.message
    )
    assert box_id in refused.value.message
    assert not BoxPaths(runtime.boxes_dir, box_id).dir.exists()


async def test_a_box_whose_agent_never_listens_times_out_and_leaves_nothing(
    make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch, state_dir: Path
) -> None:
    runtime = make_runtime(chromium=False, ready_timeout_s=0.5)
    seen: list[list[str]] = []
    agent_replaced_by(monkeypatch, ["sleep", "300"], seen)
    box_id = new_id()
    launched: list[tuple[int, int]] = []
    real_launch = runtime_module.launch

    def spy(argv: list[str], log: Path, **options: Any) -> Launched:
        result = real_launch(argv, log, **options)
        launched.append((result.init_pid, result.init_start))
        return result

    monkeypatch.setattr(runtime_module, "launch", spy)
    with pytest.raises(Timeout):
        await runtime.create(box_id, Spec(), Placement())
    assert not BoxPaths(runtime.boxes_dir, box_id).dir.exists()
    [(init_pid, init_start)] = launched
    assert procs.tree(init_pid, init_start) == []


# Isolation


async def test_a_file_in_one_box_is_invisible_to_another_and_to_the_host(
    make_runtime: MakeRuntime, state_dir: Path
) -> None:
    runtime = make_runtime(chromium=False)
    a, b = new_id(), new_id()
    await asyncio.gather(
        runtime.create(a, Spec(), Placement()), runtime.create(b, Spec(), Placement())
    )
    box_a, box_b = await runtime.desktop(a), await runtime.desktop(b)
    await write_bytes(box_a, "/home/box/secret-a.txt", b"only a")
    await shell(box_a, "echo scratch > /tmp/scratch-of-a.txt")

    assert await read_bytes(box_a, "/home/box/secret-a.txt") == b"only a"
    seen_by_b = await shell(
        box_b, "ls -a /home/box; ls /tmp; test -e /tmp/scratch-of-a.txt || echo absent"
    )
    assert "secret-a.txt" not in seen_by_b and "scratch-of-a" not in seen_by_b
    assert seen_by_b.strip().endswith("absent")
    # On the host, the file is in a's home folder and nowhere else.
    found = sorted(p.relative_to(state_dir) for p in state_dir.rglob("secret-a.txt"))
    assert found == [Path("boxes") / a / "home" / "secret-a.txt"]
    assert not Path("/tmp/scratch-of-a.txt").exists()


async def test_each_box_runs_as_a_range_of_host_ids_of_its_own(
    make_runtime: MakeRuntime, state_dir: Path
) -> None:
    """The kernel counts inotify instances, user namespaces and queued signals per host
    uid; boxes that shared one would share those counts (box_ids.py)."""
    runtime = make_runtime(chromium=False)
    a, b = new_id(), new_id()
    await asyncio.gather(
        runtime.create(a, Spec(), Placement()), runtime.create(b, Spec(), Placement())
    )
    uids = {}
    for box_id in (a, b):
        uid = record_of(runtime, box_id).box_uid
        assert uid is not None and range_of(uid) is not None
        await shell(await runtime.desktop(box_id), "echo mine > /home/box/mine.txt")
        home = BoxPaths(runtime.boxes_dir, box_id).home
        assert home.stat().st_uid == (home / "mine.txt").stat().st_uid == uid
        # Every process of the box runs as an id of its range: root in it as the first.
        for pid in box_pids(runtime, box_id):
            status = Path(f"/proc/{pid}/status").read_text()
            real = int(next(x for x in status.splitlines() if x.startswith("Uid:")).split()[1])
            assert range_of(real) == range_of(uid), (box_id, pid, real)
        uids[box_id] = uid
    assert range_of(uids[a]) != range_of(uids[b])


async def test_host_secrets_are_not_visible_in_a_box(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime(chromium=False)
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement())
    desktop = await runtime.desktop(box_id)
    seen = await shell(
        desktop,
        "for p in /etc/shadow /root /etc/ssl/private /work; do "
        "test -e $p && echo $p:seen || echo $p:absent; done; echo HOME=$HOME",
    )
    assert seen.split() == [
        "/etc/shadow:absent",
        "/root:absent",
        "/etc/ssl/private:absent",
        "/work:absent",
        "HOME=/home/box",
    ]
    with pytest.raises(NotFound):
        await read_bytes(desktop, "/etc/shadow")


CONNECT = textwrap.dedent("""
    import socket
    try:
        with socket.create_connection(("127.0.0.1", {port}), timeout=5) as s:
            print(s.recv(2).decode())
    except OSError as exc:
        print("refused", exc)
""")


async def test_no_box_reaches_the_host_loopback_whatever_its_network_policy(
    make_runtime: MakeRuntime, tcp_server: int
) -> None:
    runtime = make_runtime(chromium=False)
    offline, online = new_id(), new_id()
    await runtime.create(offline, spec(network=False), Placement())
    await runtime.create(online, spec(network=True), Placement())
    argv = ["python3", "-c", CONNECT.format(port=tcp_server)]

    cut = await run(await runtime.desktop(offline), *argv, timeout_ms=20_000)
    also_cut = await run(await runtime.desktop(online), *argv, timeout_ms=20_000)
    assert cut.stdout.startswith("refused"), cut
    assert also_cut.stdout.startswith("refused"), also_cut
    # The online box has a way out all the same (tests/security reaches a host with it).
    routes = await shell(await runtime.desktop(online), "cat /proc/net/route")
    assert "00000000" in routes.split("\n", 2)[1], routes
    assert (await shell(await runtime.desktop(offline), "cat /proc/net/route")).count("\n") == 1


# Lifecycle


TICKER = "while :; do date +%T.%N; date +%s.%N >> /home/box/ticks; sleep 0.05; done"


async def test_pause_freezes_the_box_and_resume_lets_it_run_again(
    make_runtime: MakeRuntime, state_dir: Path
) -> None:
    runtime = make_runtime(chromium=False)
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement())
    desktop = await runtime.desktop(box_id)
    await launch(desktop, 0, "xterm", "-e", "sh", "-c", TICKER)
    ticks = state_dir / "boxes" / box_id / "home" / "ticks"

    first, _, _ = await desktop.frame_hash(0)
    await wait_for(lambda: ticks.exists())
    await _wait_screen_change(desktop, first)

    # What every runtime's pause does to its listing and desktop: tests/contract/.
    await runtime.pause(box_id)
    assert all(procs.is_stopped(pid) for pid in box_pids(runtime, box_id))
    size = ticks.stat().st_size
    await asyncio.sleep(1.0)  # long enough for 20 ticks had the box been running
    assert ticks.stat().st_size == size

    await runtime.resume(box_id)
    await wait_for(lambda: ticks.stat().st_size > size)
    resumed = await runtime.desktop(box_id)
    frozen, _, _ = await resumed.frame_hash(0)
    await _wait_screen_change(resumed, frozen)


async def _wait_screen_change(desktop: Desktop, before: str) -> None:
    async def changed() -> None:
        while (await desktop.frame_hash(0))[0] == before:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(changed(), 20)


async def test_a_stopped_box_ends_its_processes_and_starts_in_a_new_desktop_with_its_ids(
    make_runtime: MakeRuntime,
) -> None:
    # That it keeps its files, as every runtime's does: tests/contract/.
    runtime = make_runtime()
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement(persistent=True))
    desktop = await runtime.desktop(box_id)
    await write_bytes(desktop, "/home/box/kept.txt", b"still here")
    await shell(desktop, "echo gone > /tmp/scratch.txt")
    old_pids = box_pids(runtime, box_id)
    home = BoxPaths(runtime.boxes_dir, box_id).home

    await runtime.stop(box_id)
    assert all_ended(old_pids)
    assert (home / "kept.txt").read_bytes() == b"still here"

    uid = record_of(runtime, box_id).box_uid
    started = await runtime.start(box_id)
    assert len(started.viewer_urls) == 1
    fresh = await runtime.desktop(box_id)
    assert fresh is not desktop
    assert await read_bytes(fresh, "/home/box/kept.txt") == b"still here"
    # The box keeps its range of host ids, and so its files keep their owner.
    assert record_of(runtime, box_id).box_uid == uid == (home / "kept.txt").stat().st_uid
    assert "absent" in await shell(fresh, "test -e /tmp/scratch.txt || echo absent")
    assert "chromium" in [w.class_.lower() for w in await windows(fresh, 0)]
    assert set(box_pids(runtime, box_id)).isdisjoint(old_pids)


async def test_a_box_that_is_not_persistent_ended_without_stop_starts_with_a_fresh_home(
    make_runtime: MakeRuntime,
) -> None:
    """`POST …/stop` keeps a box's files for every box (tests/contract/); `persistent` is
    about what survives a box that did not stop by `stop` (a crash, a restarted host)."""
    runtime = make_runtime(chromium=False)
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement())
    await write_bytes(await runtime.desktop(box_id), "/home/box/kept.txt", b"x")
    # Here its processes are killed.
    pids = box_pids(runtime, box_id)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
    await wait_for(lambda: all_ended(pids))
    assert await states(runtime) == {box_id: "stopped"}
    await runtime.start(box_id)
    listing = await shell(await runtime.desktop(box_id), "ls /home/box")
    assert "kept.txt" not in listing


async def test_a_paused_box_that_is_stopped_ends_every_process(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime(chromium=False)
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement())
    pids = box_pids(runtime, box_id)
    await runtime.pause(box_id)
    await runtime.stop(box_id)
    assert all_ended(pids)


async def test_delete_removes_the_folder_and_every_process(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime()
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement(persistent=True))
    record = record_of(runtime, box_id)
    assert record.init_pid is not None and record.init_start is not None
    pids = box_pids(runtime, box_id)
    assert len(pids) > 5  # init, agent, Xvfb, openbox, x11vnc, Chromium and its helpers

    # That it is no longer listed nor reached, as on every runtime: tests/contract/.
    await runtime.delete(box_id)
    assert not BoxPaths(runtime.boxes_dir, box_id).dir.exists()
    assert procs.tree(record.init_pid, record.init_start) == []
    assert all_ended(pids)


async def test_exec_timeout_kills_the_process_group_inside_the_box(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime(chromium=False)
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement())
    desktop = await runtime.desktop(box_id)

    result = await run(desktop, "sh", "-c", "sleep 300 & sleep 301 & wait", timeout_ms=500)
    assert result.timed_out and result.code is None
    await wait_for(lambda: not any("sleep 30" in c for c in commands_in_box(runtime, box_id)))
    # The box itself is unharmed.
    assert (await run(desktop, "echo", "ok")).stdout == "ok\n"


# Restart of holmd

CREATE_AND_EXIT = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    from holm.adapters.local.runtime import LocalRuntime
    from holm.wire.actions import WriteFile, WriteWhat
    from holm.wire.spec import Placement, Spec

    async def main() -> None:
        runtime = LocalRuntime(
            Path(sys.argv[1]), "earlier-server", display_base={base}, display_count={count},
            chromium=False,
        )
        await runtime.create(sys.argv[2], Spec(), Placement(persistent=True))
        note = WriteWhat(path="/home/box/note", contents_base64="YmVmb3Jl")  # b"before"
        await (await runtime.desktop(sys.argv[2])).act(0, WriteFile(what=note))
        await runtime.close()

    asyncio.run(main())
""").format(base=DISPLAY_BASE, count=DISPLAY_COUNT)


async def test_a_new_runtime_adopts_the_boxes_of_a_holmd_that_exited(
    make_runtime: MakeRuntime, state_dir: Path
) -> None:
    box_id = new_id()
    make_runtime(chromium=False)  # so that the fixture ends the box whatever happens
    earlier = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", CREATE_AND_EXIT, str(state_dir / "boxes"), box_id],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert earlier.returncode == 0, earlier.stderr

    runtime = make_runtime(chromium=False)
    listed = await runtime.list()
    assert [(b.box_id, b.state, b.server_id) for b in listed] == [
        (box_id, "running", "earlier-server")
    ]
    assert listed[0].placement == Placement(persistent=True)
    # Its whole life on after that, as every runtime's adopted box: tests/contract/.
    desktop = await runtime.desktop(box_id)
    assert await read_bytes(desktop, "/home/box/note") == b"before"


async def test_a_box_whose_processes_died_is_listed_stopped_and_can_start_again(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime(chromium=False)
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement())
    record = record_of(runtime, box_id)
    assert record.init_pid is not None
    os.kill(record.init_pid, 9)
    await wait_for(lambda: all_ended([record.init_pid]))

    assert await states(runtime) == {box_id: "stopped"}
    await runtime.start(box_id)
    assert (await run(await runtime.desktop(box_id), "true")).code == 0


# CPU priority


def nice_of(pid: int) -> int | None:
    """The nice value of `pid` (field 19 of /proc/PID/stat), None once it ended."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    return int(raw[raw.rindex(")") + 2 :].split()[16])


async def test_every_process_of_a_box_runs_below_holmds_priority(
    make_runtime: MakeRuntime,
) -> None:
    # One box's boot must not slow every other box's requests (priority.py).
    runtime = make_runtime()
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement())
    pids = box_pids(runtime, box_id)
    names = {pid: Path(f"/proc/{pid}/comm").read_text().strip() for pid in pids}
    assert {"Xvfb", "chromium"} <= set(names.values()), names
    assert os.getpriority(os.PRIO_PROCESS, 0) < BOX_NICE
    niced = {names[pid]: nice_of(pid) for pid in pids}
    # Chromium may lower its own background processes further, never raise them.
    assert all(nice is None or nice >= BOX_NICE for nice in niced.values()), niced
    await runtime.delete(box_id)


async def test_boxes_past_the_boots_at_once_queue_and_each_comes_up(
    make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Creates past the bound wait for a boot to end, none is refused.
    runtime = make_runtime(chromium=False, boots_at_once=2)
    booting, most = 0, 0
    boot = runtime._boot

    async def counted(paths: BoxPaths, record: BoxRecord) -> Any:
        nonlocal booting, most
        booting += 1
        most = max(most, booting)
        try:
            return await boot(paths, record)
        finally:
            booting -= 1

    monkeypatch.setattr(runtime, "_boot", counted)
    box_ids = [new_id() for _ in range(4)]
    await asyncio.gather(*(runtime.create(box_id, Spec(), Placement()) for box_id in box_ids))
    assert most == 2
    assert await states(runtime) == dict.fromkeys(box_ids, "running")
    for box_id in box_ids:
        assert (await run(await runtime.desktop(box_id), "true")).code == 0
        await runtime.delete(box_id)


async def test_a_box_whose_loopback_set_up_failed_is_brought_up_once_more(
    make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # bwrap's RTM_NEWADDR fails now and then while boxes boot side by side (runtime.py's
    # LOOPBACK_FAILED): the first try's processes end and the box comes up; another
    # failure is not tried again.
    runtime = make_runtime(chromium=False)
    boot = runtime._boot
    first_inits: list[tuple[int, int]] = []

    async def failing_once(paths: BoxPaths, record: BoxRecord) -> Any:
        if first_inits:
            return await boot(paths, record)
        launched = await asyncio.to_thread(runtime._launch, paths, record)
        assert launched.init_pid is not None and launched.init_start is not None
        first_inits.append((launched.init_pid, launched.init_start))
        raise Unavailable(
            f"{runtime_module.LOOPBACK_FAILED}: No child processes (box {record.box_id} ended "
            "with 1 before its agent listened)",
            retryable=False,
        )

    monkeypatch.setattr(runtime, "_boot", failing_once)
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement())
    assert await states(runtime) == {box_id: "running"}
    assert not procs.is_alive(*first_inits[0])
    assert record_of(runtime, box_id).init_pid != first_inits[0][0]
    assert (await run(await runtime.desktop(box_id), "true")).code == 0
    await runtime.delete(box_id)

    calls = 0

    async def failing(paths: BoxPaths, record: BoxRecord) -> Any:
        nonlocal calls
        calls += 1
        raise Unavailable("no free X displays", retryable=False)

    monkeypatch.setattr(runtime, "_boot", failing)
    with pytest.raises(Unavailable, match="no free X displays"):
        await runtime.create(new_id(), Spec(), Placement())
    assert calls == 1
    assert await states(runtime) == {}


# Limits


async def test_memory_and_cpu_limits_are_cgroups_the_box_cannot_exceed(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime(chromium=False)
    assert runtime.can().memory_limit and runtime.can().cpu_limit
    box_id = new_id()
    await runtime.create(box_id, Spec(), Placement(memory="256m", cpus="0.5"))
    record = record_of(runtime, box_id)
    groups = [Path(p).parent for p in record.cgroups]
    # v1 keeps a limit in a group per controller, v2 every limit in one group.
    names = ("memory.limit_in_bytes", "cpu.cfs_quota_us", "memory.max", "cpu.max", "pids.max")
    limits = {n: (g / n).read_text().strip() for g in groups for n in names if (g / n).exists()}
    assert limits["pids.max"] == str(runtime.pids_max)
    if "memory.limit_in_bytes" in limits:
        assert limits["memory.limit_in_bytes"] == str(256 << 20)
        assert limits["cpu.cfs_quota_us"] == "50000"
    else:
        assert limits["memory.max"] == str(256 << 20)
        assert limits["cpu.max"] == "50000 100000"
    for group in groups:
        members = {int(p) for p in (group / "cgroup.procs").read_text().split()}
        assert set(box_pids(runtime, box_id)) <= members

    desktop = await runtime.desktop(box_id)
    small = await run(
        desktop, "python3", "-c", "b = b'x' * (32 << 20); print('ok')", timeout_ms=30_000
    )
    large = await run(
        desktop, "python3", "-c", "b = b'x' * (512 << 20); print('ok')", timeout_ms=30_000
    )
    assert small.stdout == "ok\n"
    assert large.code != 0 and large.stdout == ""
    # The OOM killer took the allocation, not the box.
    assert (await run(desktop, "echo", "alive")).stdout == "alive\n"

    await runtime.delete(box_id)
    assert not any(group.exists() for group in groups)


# The box's network stack


async def test_a_boxs_pasta_ends_with_the_box_whoever_ends_it(
    make_runtime: MakeRuntime,
) -> None:
    first, second = make_runtime(chromium=False), make_runtime(chromium=False)
    box_id = new_id()
    await first.create(box_id, spec(network=True), Placement())
    record = record_of(first, box_id)
    assert record.net_pid is not None and record.net_start is not None
    assert record.net_pidfile is None
    assert procs.is_alive(record.net_pid, record.net_start)
    assert Path(f"/proc/{record.net_pid}/comm").read_text().startswith(("pasta", "passt"))

    # Another runtime object (a restarted holmd) stops it: pasta ends too.
    await second.stop(box_id)
    await wait_for(lambda: not procs.is_alive(record.net_pid or 0, record.net_start or 0))

    # A holmd that died while pasta came up left only pasta's pidfile in the record.
    await second.start(box_id)
    again = record_of(second, box_id)
    assert again.net_pid is not None and again.net_start is not None
    pidfile = Path(tempfile.mkstemp(prefix="holm-pasta-", dir="/tmp")[1])
    pidfile.write_text(f"{again.net_pid}\n")
    crashed = msgspec.structs.replace(again, net_pid=None, net_start=None)
    crashed.net_pidfile = str(pidfile)
    write_record(BoxPaths(first.boxes_dir, box_id).record, crashed)
    await first.delete(box_id)
    assert not procs.is_alive(again.net_pid, again.net_start)
    assert not pidfile.exists()


def _prohibited(init_pid: int) -> list[str]:
    """The rules that keep the box from the host's own addresses, read from the host."""
    shown = subprocess.run(
        ["nsenter", f"--target={init_pid}", "--net", "--", "ip", "rule", "show"],
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in shown.stdout.splitlines() if "prohibit" in line]


async def test_a_running_box_whose_pasta_ended_gets_a_new_one_when_boxes_are_listed(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    """A pasta that crashes (or is killed) leaves its box without a way out; the next
    listing (the reaper's, every 30 s, or a restarted holmd's) gives the box a new one."""
    (tmp_path / "hello").write_text("hi from the test host")
    with served_host(tmp_path, "loc") as host, hi_server(host.host_address) as host_side:
        runtime = make_runtime(chromium=False)
        box_id = new_id()
        await runtime.create(box_id, spec(network=True), Placement())
        desktop = await runtime.desktop(box_id)
        fetch = f"http://{host.address}:{host.http_port}/hello"
        fetched = [
            "python3",
            "-c",
            f"import urllib.request as u; print(u.urlopen('{fetch}').read().decode())",
        ]
        assert (await run(desktop, *fetched)).stdout == "hi from the test host\n"
        record = record_of(runtime, box_id)
        assert record.init_pid is not None and record.net_pid is not None
        assert record.net_start is not None
        rules = _prohibited(record.init_pid)
        assert rules

        os.kill(record.net_pid, signal.SIGKILL)
        await wait_for(lambda: not procs.is_alive(record.net_pid or 0, record.net_start or 0))
        assert (await run(desktop, *fetched)).code != 0

        # A restarted holmd: another runtime object lists the boxes.
        listed = await make_runtime(chromium=False).list()
        assert [box.state for box in listed if box.box_id == box_id] == ["running"]
        again = record_of(runtime, box_id)
        assert again.net_pid is not None and again.net_start is not None
        assert again.net_pid != record.net_pid and again.net_pidfile is None
        assert procs.is_alive(again.net_pid, again.net_start)
        status = Path(f"/proc/{again.net_pid}/status").read_text()
        assert f"Uid:\t{record.box_uid}\t" in status
        assert (await run(desktop, *fetched)).stdout == "hi from the test host\n"
        # The rules made at the box's start still keep it from the host's addresses.
        assert _prohibited(record.init_pid) == rules
        reach = f"import socket; socket.create_connection(('{host.host_address}', {host_side}), 5)"
        assert (await run(desktop, "python3", "-c", reach)).code != 0

        # A listing with nothing lost starts no pasta.
        await runtime.list()
        assert record_of(runtime, box_id).net_pid == again.net_pid
        await runtime.delete(box_id)
        assert not procs.is_alive(again.net_pid, again.net_start)


def test_a_box_that_does_not_come_up_gets_no_file_its_run_folder_links_to(
    tmp_path: Path,
) -> None:
    """When a box does not come up, holmd (root, on the host) quotes the end of the logs in
    its run folder to the caller. The box writes that folder: a log there that links to a
    file of the host (the server's token) is not read."""
    paths = BoxPaths(tmp_path / "boxes", "box_linked")
    paths.run.mkdir(parents=True)
    token = tmp_path / "token"
    token.write_text("the-servers-token")
    (paths.run / "xvfb-0.log").write_text("Xvfb said this")
    (paths.run / "x11vnc-0.log").symlink_to(token)
    quoted = runtime_module._run_logs_tail(paths)
    assert "Xvfb said this" in quoted
    assert "the-servers-token" not in quoted
