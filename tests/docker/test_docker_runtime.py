"""The runtime contract, against a real Docker Engine: boxes are containers from the
session's image, with a real Xvfb, openbox, x11vnc and Chromium driven by the in-box agent
over the bind-mounted socket."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import tempfile
from pathlib import Path

import docker
import pytest
from desktop_kit import cursor, list_dir, read_bytes, run, windows, write_bytes
from kits.procfs import held_open

from holm.adapters.docker import runtime as docker_runtime
from holm.adapters.docker.runtime import (
    DockerRuntime,
    container_name,
    docker_runtime_if_engine_answers,
    owned_profile,
    profile_volume,
)
from holm.adapters.local import procs
from holm.adapters.registry import make_runtimes
from holm.config import Config, load_config
from holm.errors import (
    BadRequest,
    Denied,
    NotFound,
    Unavailable,
)
from holm.wire.actions import Click, Press, Type, WaitStill
from holm.wire.api import ImageInfo
from holm.wire.runtime import RuntimeBox
from holm.wire.spec import DesktopSpec, Placement, Policy, Spec, spec_digest
from holm.wire.values import Point

from .conftest import MakeRuntime, new_box_id

pytestmark = pytest.mark.docker


async def _box(runtime: DockerRuntime, box_id: str) -> RuntimeBox:
    boxes = {box.box_id: box for box in await runtime.list()}
    assert box_id in boxes, f"{box_id} not listed"
    return boxes[box_id]


async def _shell(runtime: DockerRuntime, box_id: str, script: str) -> str:
    desktop = await runtime.desktop(box_id)
    result = await run(desktop, "sh", "-c", script)
    assert result.code == 0, result.stderr
    return result.stdout


async def test_a_box_comes_up_with_chromium_and_takes_input(
    runtime: DockerRuntime, engine: docker.DockerClient, server_id: str
) -> None:
    box_id = new_box_id()
    placement = Placement(expires_after_secs=600, idle_timeout_secs=300)
    started = await runtime.create(box_id, Spec(), placement)

    # The viewer's socket is reached on the host, through the bound run folder.
    assert len(started.viewer_urls) == 1
    assert Path(started.viewer_urls[0].removeprefix("unix:")).is_socket()
    desktop = await runtime.desktop(box_id)
    shown = await windows(desktop, 0)
    assert any(w.class_.lower() == "chromium" and w.width > 0 for w in shown), shown

    await desktop.act(0, Click(at=Point(x=321, y=456)))
    assert await cursor(desktop, 0) == Point(x=321, y=456)

    # Chromium may still be drawing just after it came up: compare once the screen is still.
    await desktop.act(0, WaitStill(settle_ms=500, within_ms=15_000))
    first = await desktop.frame(0)
    assert first.png is not None and first.png.startswith(b"\x89PNG")
    assert (first.width, first.height) == (1280, 800)
    again = await desktop.frame(0, have=first.hash)
    assert again.unchanged and again.png is None
    await desktop.act(0, Press(chord=["ctrl", "l"]))
    await desktop.act(0, Type(text="holm docker box"))
    # Chromium draws the typed text on its own time: wait for it, bounded.
    for _ in range(100):
        changed = await desktop.frame(0, have=first.hash)
        if not changed.unchanged:
            break
        await asyncio.sleep(0.05)
    assert not changed.unchanged and changed.png is not None

    assert (await _shell(runtime, box_id, "echo $HOME; hostname")).split() == [
        "/home/box",
        "holm-box",
    ]
    await write_bytes(desktop, "/home/box/notes.txt", b"written through the agent")
    assert await read_bytes(desktop, "/home/box/notes.txt") == b"written through the agent"
    assert "notes.txt" in {f.name for f in await list_dir(desktop, "/home/box")}

    listed = await _box(runtime, box_id)
    assert listed.state == "running"
    assert listed.server_id == server_id
    assert listed.spec == Spec()
    assert listed.placement == placement
    labels = engine.containers.get(container_name(box_id)).labels
    assert labels["holm.box"] == box_id and labels["holm.server"] == server_id
    assert labels["holm.expires_after_secs"] == "600"
    assert labels["holm.idle_timeout_secs"] == "300"


async def test_pause_freezes_the_box_and_resume_thaws_it(
    runtime: DockerRuntime, engine: docker.DockerClient
) -> None:
    box_id = new_box_id()
    await runtime.create(box_id, Spec(), Placement())
    desktop = await runtime.desktop(box_id)

    # What every runtime's pause does to its listing and desktop: tests/contract/.
    await runtime.pause(box_id)
    assert engine.containers.get(container_name(box_id)).status == "paused"
    # A frozen agent answers nothing until it is thawed, then answers what it was asked.
    pending = asyncio.ensure_future(cursor(desktop, 0))
    done, _ = await asyncio.wait({pending}, timeout=0.5)
    assert not done

    await runtime.resume(box_id)
    assert isinstance(await pending, Point)
    assert await cursor(await runtime.desktop(box_id), 0) == await pending


async def test_a_persistent_box_keeps_its_container_across_stop_and_start(
    runtime: DockerRuntime, engine: docker.DockerClient
) -> None:
    # That it keeps its home, as every runtime's box does: tests/contract/.
    box_id = new_box_id()
    await runtime.create(box_id, Spec(), Placement(persistent=True))
    container_id = engine.containers.get(container_name(box_id)).id
    await _shell(runtime, box_id, "echo kept > ~/kept.txt; echo kept > /opt/kept.txt")

    await runtime.stop(box_id)
    started = await runtime.start(box_id)
    assert Path(started.viewer_urls[0].removeprefix("unix:")).is_socket()
    assert await _shell(runtime, box_id, "cat ~/kept.txt /opt/kept.txt") == "kept\nkept\n"
    assert engine.containers.get(container_name(box_id)).id == container_id
    shown = await windows(await runtime.desktop(box_id), 0)
    assert any(w.class_.lower() == "chromium" for w in shown)


async def test_a_box_that_is_not_persistent_also_keeps_its_container_across_stop_and_start(
    runtime: DockerRuntime, engine: docker.DockerClient
) -> None:
    box_id = new_box_id()
    await runtime.create(box_id, Spec(), Placement())
    container_id = engine.containers.get(container_name(box_id)).id
    await _shell(runtime, box_id, "echo gone > ~/gone.txt; echo gone > /opt/gone.txt")

    await runtime.stop(box_id)
    await runtime.start(box_id)

    desktop = await runtime.desktop(box_id)
    result = await run(desktop, "sh", "-c", "test -e ~/gone.txt && test -e /opt/gone.txt")
    assert result.code == 0
    assert engine.containers.get(container_name(box_id)).id == container_id
    listed = await _box(runtime, box_id)
    assert listed.state == "running" and listed.spec == Spec()


async def test_delete_removes_the_container_and_its_run_folder(
    runtime: DockerRuntime, engine: docker.DockerClient, boxes_dir: Path
) -> None:
    box_id = new_box_id()
    await runtime.create(box_id, Spec(), Placement())
    assert (boxes_dir / box_id / "run" / "agent.sock").is_socket()

    # That it is no longer listed nor reached, as on every runtime: tests/contract/.
    await runtime.delete(box_id)
    with pytest.raises(docker.errors.NotFound):
        engine.containers.get(container_name(box_id))
    assert not (boxes_dir / box_id).exists()


async def test_a_container_removed_behind_the_runtime_is_no_longer_listed(
    make_runtime: MakeRuntime, engine: docker.DockerClient
) -> None:
    runtime = make_runtime(chromium=False)
    box_id = new_box_id()
    await runtime.create(box_id, Spec(policy=Policy(network=True)), Placement())
    pasta = _pasta_of(runtime, box_id)
    engine.containers.get(container_name(box_id)).remove(force=True)

    assert box_id not in {box.box_id for box in await runtime.list()}
    # Its pasta, which holds the namespace it served, ends once the listing misses it.
    assert not procs.is_alive(*pasta)
    with pytest.raises(NotFound):
        await runtime.pause(box_id)
    await runtime.delete(box_id)


async def test_a_box_without_network_has_only_its_loopback(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime(chromium=False)
    offline, online = new_box_id(), new_box_id()
    await runtime.create(offline, Spec(policy=Policy(network=False)), Placement())
    await runtime.create(online, Spec(), Placement())

    assert (await _shell(runtime, offline, "ls /sys/class/net")).split() == ["lo"]
    assert "eth0" in (await _shell(runtime, online, "ls /sys/class/net")).split()


async def test_memory_and_cpu_limits_are_the_containers_cgroup_limits(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime(chromium=False)
    box_id = new_box_id()
    await runtime.create(box_id, Spec(), Placement(memory="300m", cpus="0.5"))

    # cgroup v2 (memory.max, cpu.max) or v1 (this machine), read from inside the box.
    memory = await _shell(
        runtime,
        box_id,
        "cat /sys/fs/cgroup/memory.max 2>/dev/null"
        " || cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
    )
    assert int(memory) == 300 << 20
    cpu = await _shell(
        runtime,
        box_id,
        "cat /sys/fs/cgroup/cpu.max 2>/dev/null"
        " || echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us)",
    )
    quota, period = (int(n) for n in cpu.split())
    assert quota / period == 0.5


async def test_screens_come_at_the_specs_size_each_with_its_viewer(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime(chromium=False)
    box_id = new_box_id()
    started = await runtime.create(
        box_id, Spec(desktop=DesktopSpec(screens=2, width=800, height=600)), Placement()
    )
    assert len(started.viewer_urls) == 2
    desktop = await runtime.desktop(box_id)
    for screen in (0, 1):
        frame = await desktop.frame(screen)
        assert (frame.width, frame.height) == (800, 600)
    await desktop.act(1, Click(at=Point(x=700, y=500)))
    assert await cursor(desktop, 1) == Point(x=700, y=500)


async def test_what_the_runtime_refuses(runtime: DockerRuntime) -> None:
    with pytest.raises(BadRequest):
        await runtime.create(new_box_id(), Spec(), Placement(memory="lots"))
    with pytest.raises(BadRequest):
        await runtime.create(new_box_id(), Spec(), Placement(cpus="two"))
    with pytest.raises(BadRequest):
        await runtime.create(
            new_box_id(), Spec(desktop=DesktopSpec(packages=["jq; rm"])), Placement()
        )


def test_the_runtime_says_what_it_can_do(runtime: DockerRuntime) -> None:
    can = runtime.can()
    assert can.packages and can.memory_limit and can.cpu_limit and can.persistent
    assert can.pause and can.stop and can.network_off and can.pages
    assert can.wayland and can.wayland_without == []


async def test_the_runtime_is_there_only_when_an_engine_answers(
    engine: docker.DockerClient, boxes_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = docker_runtime_if_engine_answers(boxes_dir, "s")
    assert runtime is not None and runtime.arch == engine.version()["Arch"]
    await runtime.close()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{boxes_dir}/no-engine.sock")
    assert docker_runtime_if_engine_answers(boxes_dir, "s") is None


async def test_a_browser_profile_outlives_its_box_and_serves_one_box_at_a_time(
    make_runtime: MakeRuntime, engine: docker.DockerClient
) -> None:
    runtime = make_runtime(chromium=False)
    profile = f"test-{new_box_id()}"
    first, second = new_box_id(), new_box_id()
    try:
        await runtime.create(first, Spec(), Placement(profile=profile))
        await _shell(runtime, first, "echo signed-in > ~/.holm/cookie")
        with pytest.raises(Denied):
            await runtime.create(second, Spec(), Placement(profile=profile))
        await runtime.delete(first)

        await runtime.create(second, Spec(), Placement(profile=profile))
        assert await _shell(runtime, second, "cat ~/.holm/cookie") == "signed-in\n"
        with pytest.raises(BadRequest):
            await runtime.create(new_box_id(), Spec(), Placement(profile="../etc"))
    finally:
        await runtime.delete(second)
        engine.volumes.get(profile_volume(profile)).remove()


async def test_a_browser_profile_is_its_workspace_s_own(
    make_runtime: MakeRuntime, engine: docker.DockerClient
) -> None:
    """Two workspaces that name the same profile get one each: a box of one never opens the
    cookies of the other's (and neither waits for the other's box to end)."""
    runtime = make_runtime(chromium=False)
    profile = f"test-{new_box_id()}"
    mine, theirs = new_box_id(), new_box_id()
    try:
        await runtime.create(mine, Spec(), Placement(profile=profile), owner="ws_mine")
        await _shell(runtime, mine, "echo signed-in > ~/.holm/cookie")
        await runtime.create(theirs, Spec(), Placement(profile=profile), owner="ws_theirs")
        seen = await _shell(runtime, theirs, "test -e ~/.holm/cookie && echo seen || echo none")
        assert seen == "none\n"
    finally:
        for box_id in (mine, theirs):
            await runtime.delete(box_id)
        for owner in ("ws_mine", "ws_theirs"):
            engine.volumes.get(profile_volume(owned_profile(profile, owner))).remove()


async def test_the_server_has_the_docker_runtime_when_the_engine_answers(
    engine: docker.DockerClient, boxes_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtimes = make_runtimes(Config(state_dir=boxes_dir.parent), "s")
    found = runtimes["docker"]
    for runtime in runtimes.values():
        await runtime.close()
    assert isinstance(found, DockerRuntime)
    assert found.images.source.base_image == "debian:bookworm-slim"
    monkeypatch.setenv("HOLM_DOCKER_BASE_IMAGE", "debian:trixie-slim")
    others = make_runtimes(load_config(state_dir=boxes_dir.parent), "s")
    for runtime in others.values():
        await runtime.close()
    other = others["docker"]
    assert isinstance(other, DockerRuntime)
    assert other.images.source.base_image == "debian:trixie-slim"
    assert other.images.key(Spec()) != found.images.key(Spec())


async def test_a_box_whose_container_ends_before_its_desktop_is_up_is_unavailable(
    make_runtime: MakeRuntime, engine: docker.DockerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The container's command, in place of the agent: it says why and ends.
    monkeypatch.setattr(docker_runtime, "_START_COMMAND", 'echo "no desktop today" >&2; exit 3')
    runtime = make_runtime()
    box_id = new_box_id()
    with pytest.raises(Unavailable, match=r"ended with 3.*no desktop today"):
        await runtime.create(box_id, Spec(), Placement())
    assert box_id not in {box.box_id for box in await runtime.list()}
    with pytest.raises(docker.errors.NotFound):
        engine.containers.get(container_name(box_id))


async def test_create_names_the_image_it_had_to_build(
    runtime: DockerRuntime, session_image: ImageInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine records `image_built` for an image a create built: the runtime names it
    in `Started.built`, and only when it had no built image for the spec."""
    found = await runtime.create(new_box_id(), Spec(), Placement())
    assert found.built is None

    async def none_yet(digest: str) -> ImageInfo:
        raise NotFound(f"no image {digest}")

    # As if the image was not there before this create (building it again takes minutes).
    monkeypatch.setattr(runtime.images, "get_image", none_yet)
    built = await runtime.create(new_box_id(), Spec(), Placement())
    assert built.built is not None
    assert built.built.image == session_image.image
    assert built.built.spec_digest == (session_image.spec_digest or spec_digest(Spec()))


async def test_each_screen_s_viewer_answers_rfb_on_its_stream(
    make_runtime: MakeRuntime,
) -> None:
    """`open_stream(…, "vnc", screen)` reaches the screen's x11vnc (a Unix socket in the
    box's run folder), which speaks RFB to holmd with no password (the relay's ticket
    guards it)."""
    runtime = make_runtime(chromium=False)
    box_id = new_box_id()
    await runtime.create(box_id, Spec(desktop=DesktopSpec(screens=2)), Placement())
    for screen in (0, 1):
        reader, writer = await runtime.open_stream(box_id, "vnc", screen)
        try:
            assert await reader.readexactly(12) == b"RFB 003.008\n"
            writer.write(b"RFB 003.008\n")
            # One security type offered: None.
            assert await reader.readexactly(2) == b"\x01\x01"
        finally:
            writer.close()


def _pastas_in_the_netns_of(pasta: int) -> list[int]:
    """Every pasta that serves the network namespace `pasta` serves (each holds the
    namespace it serves open: `net:[inode]` among its descriptors)."""
    served = held_open(pasta, "net")
    assert served
    serving = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if Path(os.readlink(entry / "exe")).name.startswith("pasta") and (
                    held_open(int(entry.name), "net") & served
                ):
                    serving.append(int(entry.name))
    return sorted(serving)


def _pasta_of(runtime: DockerRuntime, box_id: str) -> tuple[int, int]:
    record = json.loads((runtime.boxes_dir / box_id / "pasta.json").read_text())
    return record["pid"], record["start"]


def _netns_of(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/ns/net")


def _global_ipv6(if_inet6: str) -> set[str]:
    """The global IPv6 addresses of every interface but the loopback, from the text of a
    /proc/net/if_inet6 (address, index, prefix length, scope, flags, name)."""
    return {
        fields[0]
        for fields in (line.split() for line in if_inet6.splitlines())
        if len(fields) == 6 and fields[3] == "00" and fields[5] != "lo"
    }


async def test_a_docker_box_with_the_network_has_the_hosts_ipv6_as_a_local_box_has(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime(chromium=False)
    box_id = new_box_id()
    await runtime.create(box_id, Spec(policy=Policy(network=True)), Placement())
    try:
        desktop = await runtime.desktop(box_id)
        inside = (await run(desktop, "cat", "/proc/net/if_inet6")).stdout
        # pasta gives the box the address of the host's way out, where the host has one
        # (the engine turns IPv6 off in a container of no network of its own; the runtime
        # turns it on).
        host, box = _global_ipv6(Path("/proc/net/if_inet6").read_text()), _global_ipv6(inside)
        assert box <= host and bool(box) == bool(host), (box, host)
    finally:
        await runtime.delete(box_id)


async def test_a_docker_boxs_pasta_ends_with_the_box_whoever_ends_it(
    make_runtime: MakeRuntime, engine: docker.DockerClient
) -> None:
    first, second = make_runtime(chromium=False), make_runtime(chromium=False)
    box_id = new_box_id()
    await first.create(box_id, Spec(policy=Policy(network=True)), Placement())
    pid, start = _pasta_of(first, box_id)
    assert Path(f"/proc/{pid}/comm").read_text().startswith(("pasta", "passt"))
    container = engine.containers.get(container_name(box_id))
    assert container.attrs["HostConfig"]["NetworkMode"] == "none"
    init = container.attrs["State"]["Pid"]
    # pasta serves the container's namespace, from the host's.
    held = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    assert _netns_of(init) in held and _netns_of(pid) == _netns_of(os.getpid())

    # Paused, the box keeps its pasta; another runtime object (a restarted holmd) that
    # stops it ends pasta too.
    await second.pause(box_id)
    assert procs.is_alive(pid, start)
    await second.resume(box_id)
    await second.stop(box_id)
    assert not procs.is_alive(pid, start)
    assert not (second.boxes_dir / box_id / "pasta.json").exists()

    # Started again: one new pasta, for the container's new namespace.
    await second.start(box_id)
    again = _pasta_of(second, box_id)
    assert again != (pid, start) and procs.is_alive(*again)
    assert await _shell(second, box_id, "tail -n +3 /proc/net/dev | cut -d: -f1 | sort | xargs")

    # A holmd that died while pasta came up left only its pidfile in the record.
    pidfile = Path(tempfile.mkstemp(prefix="holm-pasta-", dir="/tmp")[1])
    pidfile.write_text(f"{again[0]}\n")
    (first.boxes_dir / box_id / "pasta.json").write_text(json.dumps({"pidfile": str(pidfile)}))
    await first.delete(box_id)
    assert not procs.is_alive(*again)
    assert not pidfile.exists()


async def test_a_running_docker_box_whose_pasta_ended_gets_a_new_one_when_listed(
    make_runtime: MakeRuntime,
) -> None:
    """As a local box (tests/local): the next listing, the reaper's or a restarted
    holmd's, gives a box whose pasta ended a new one; one, when two holmd list the engine
    at once (replicas on a shared engine; CI's two test processes did)."""
    runtime = make_runtime(chromium=False)
    box_id = new_box_id()
    await runtime.create(box_id, Spec(policy=Policy(network=True)), Placement())
    interfaces = "tail -n +3 /proc/net/dev | cut -d: -f1 | sort | xargs"
    served = await _shell(runtime, box_id, interfaces)
    assert served != "lo\n"
    pid, start = _pasta_of(runtime, box_id)
    os.kill(pid, signal.SIGKILL)
    for _ in range(200):
        if not procs.is_alive(pid, start):
            break
        await asyncio.sleep(0.05)
    # pasta's interface went with it.
    assert await _shell(runtime, box_id, interfaces) == "lo\n"

    listings = await asyncio.gather(
        make_runtime(chromium=False).list(), make_runtime(chromium=False).list()
    )
    for listed in listings:
        assert [box.state for box in listed if box.box_id == box_id] == ["running"]
    again = _pasta_of(runtime, box_id)
    assert again != (pid, start) and procs.is_alive(*again)
    assert _pastas_in_the_netns_of(again[0]) == [again[0]]
    assert await _shell(runtime, box_id, interfaces) == served
    await runtime.list()
    assert _pasta_of(runtime, box_id) == again
    await runtime.delete(box_id)
    assert not procs.is_alive(*again)


async def test_a_docker_box_without_the_network_gets_no_pasta(runtime: DockerRuntime) -> None:
    box_id = new_box_id()
    await runtime.create(box_id, Spec(policy=Policy(network=False)), Placement())
    assert not (runtime.boxes_dir / box_id / "pasta.json").exists()
    interfaces = await _shell(runtime, box_id, "tail -n +3 /proc/net/dev | cut -d: -f1")
    assert interfaces.split() == ["lo"]
