"""A docker box is a hostile neighbour too: attacks made from inside real containers of the
docker runtime, through the box's exec. The engine is started (scripts/dockerd-up) when
none answers, and the default box image built when it is not there (minutes, once)."""

from __future__ import annotations

import ipaddress
import secrets
import socket
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from kits.net import hi_server

from holm.adapters.docker.runtime import DockerRuntime, container_name
from holm.adapters.local.network import host_addresses
from holm.wire.spec import DesktopSpec, Placement, Policy, Spec

from .conftest import SECRET, SECRET_NAME, Box, FarHost, Loop
from .test_box_servers import SERVERS, assert_private
from .test_local_box import (
    CONNECT,
    FETCH,
    FORK_LOOP,
    LINK_LOCAL,
    PIDS_MAX,
    way_out_link_local,
)

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def engine() -> Iterator[docker.DockerClient]:
    up = subprocess.run(
        [str(REPO / "scripts/dockerd-up")], capture_output=True, text=True, timeout=120
    )
    assert up.returncode == 0, f"no Docker Engine: {up.stderr}"
    client = docker.from_env(timeout=600)
    yield client
    client.close()
    if up.stdout.strip() == "started":
        subprocess.run([str(REPO / "scripts/dockerd-down")], check=True, timeout=120)


@pytest.fixture(scope="module")
def runtime(engine: docker.DockerClient, state_dir: Path, loop: Loop) -> Iterator[DockerRuntime]:
    made = DockerRuntime(
        state_dir / "docker-boxes",
        f"security-{secrets.token_hex(4)}",
        client=docker.from_env(timeout=600),
        chromium=False,
        pids_limit=PIDS_MAX,
    )
    lines: list[str] = []
    info = loop.run(made.build_image(Spec(), lines.append), timeout_s=1800)
    assert info.state is None, lines[-20:]
    yield made
    for box in loop.run(made.list()):
        if box.server_id == made.server_id:
            loop.run(made.delete(box.box_id))
    loop.run(made.close())


def create(runtime: DockerRuntime, loop: Loop, *, network: bool, spec: Spec | None = None) -> Box:
    box_id = f"box_{secrets.token_hex(6)}"
    spec = spec or Spec(policy=Policy(network=network))
    loop.run(runtime.create(box_id, spec, Placement()), timeout_s=1800)
    return Box(runtime, box_id, loop)


@pytest.fixture(scope="module")
def online(runtime: DockerRuntime, loop: Loop, test_host: FarHost) -> Iterator[Box]:
    """Made after the test host: a box is kept from the host's own addresses that the
    host has when the box starts."""
    box = create(runtime, loop, network=True)
    yield box
    loop.run(runtime.delete(box.box_id))


@pytest.fixture(scope="module")
def offline(runtime: DockerRuntime, loop: Loop) -> Iterator[Box]:
    box = create(runtime, loop, network=False)
    yield box
    loop.run(runtime.delete(box.box_id))


def connect(box: Box, address: str, port: int) -> str:
    result = box.exec(f"python3 -c '{CONNECT}' {address} {port}")
    assert result.code == 0, result
    return result.stdout.strip()


def test_no_process_of_a_docker_box_holds_a_variable_of_the_servers(
    engine: docker.DockerClient, online: Box
) -> None:
    seen = online.sh(
        "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f 2>/dev/null; echo; done; env"
    )
    assert SECRET not in seen and SECRET_NAME not in seen
    assert seen.count("HOME=/home/box") >= 3
    env = engine.containers.get(container_name(online.box_id)).attrs["Config"]["Env"]
    assert not any(SECRET in item or SECRET_NAME in item for item in env)


def test_root_in_a_docker_box_keeps_setgid_only_and_gains_nothing(
    engine: docker.DockerClient, online: Box
) -> None:
    status = online.sh("grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status").split()
    assert status == ["CapEff:", f"{1 << 6:016x}", "CapBnd:", f"{1 << 6:016x}", "NoNewPrivs:", "1"]
    assert online.exec("mount -t tmpfs none /mnt").code != 0
    attrs = engine.containers.get(container_name(online.box_id)).attrs["HostConfig"]
    assert attrs["CapDrop"] == ["ALL"] and attrs["SecurityOpt"] == ["no-new-privileges"]
    assert attrs["PidsLimit"] == PIDS_MAX


def test_root_in_a_docker_wayland_box_keeps_setuid_and_setgid_only_and_sway_is_not_root(
    engine: docker.DockerClient, runtime: DockerRuntime, loop: Loop
) -> None:
    # The default Wayland spec: the image the contract suite's Wayland box has too.
    box = create(runtime, loop, network=False, spec=Spec(desktop=DesktopSpec(server="wayland")))
    try:
        status = box.sh("grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status").split()
        kept = f"{1 << 6 | 1 << 7:016x}"
        assert status == ["CapEff:", kept, "CapBnd:", kept, "NoNewPrivs:", "1"]
        assert box.exec("mount -t tmpfs none /mnt").code != 0
        sways = box.sh("for p in $(pgrep -x sway); do stat -c %u /proc/$p; done")
        assert sways.split() == ["1000"], sways
        attrs = engine.containers.get(container_name(box.box_id)).attrs["HostConfig"]
        assert attrs["CapDrop"] == ["ALL"] and sorted(attrs["CapAdd"]) == ["SETGID", "SETUID"]
        assert attrs["SecurityOpt"] == ["no-new-privileges"]
    finally:
        loop.run(runtime.delete(box.box_id))


def test_a_fork_bomb_stops_at_the_docker_boxs_pids_limit(online: Box) -> None:
    forked, error = online.sh(f"python3 -c '{FORK_LOOP}' {10 * PIDS_MAX}").split()
    assert error == "EAGAIN" and int(forked) < PIDS_MAX
    assert subprocess.run(["true"]).returncode == 0
    assert online.sh("echo alive") == "alive\n"


GATEWAY = textwrap.dedent("""
    import socket, struct
    for line in open("/proc/net/route").read().splitlines()[1:]:
        fields = line.split()
        if fields[1] == "00000000":
            print(socket.inet_ntoa(struct.pack("<L", int(fields[2], 16))))
""")


def test_no_docker_box_reaches_the_hosts_loopback(
    online: Box, offline: Box, loopback_server: int
) -> None:
    with socket.create_connection(("127.0.0.1", loopback_server)) as s:
        assert s.recv(2) == b"hi"
    # Nor is it behind the box's gateway: pasta maps no address of the box to the host's
    # loopback.
    gateway = online.sh(f"python3 -c '{GATEWAY}'").strip()
    assert gateway
    for box, address in ((online, "127.0.0.1"), (online, gateway), (offline, "127.0.0.1")):
        assert connect(box, address, loopback_server).startswith("refused"), (box, address)


def test_a_docker_box_with_the_network_reaches_a_host_out_there(
    online: Box, test_host: FarHost
) -> None:
    url = f"http://{test_host.address}:{test_host.http_port}/payload"
    assert online.sh(f"python3 -c '{FETCH}' {url}").split()[0] == str(len(test_host.payload))


def test_a_docker_box_without_the_network_has_only_its_loopback(
    offline: Box, test_host: FarHost
) -> None:
    assert offline.sh("tail -n +3 /proc/net/dev | cut -d: -f1").split() == ["lo"]
    assert connect(offline, test_host.address, test_host.http_port).startswith("refused")


def test_a_docker_box_reaches_no_bus_and_no_sound_server_of_another(
    runtime: DockerRuntime, loop: Loop
) -> None:
    a, b = (create(runtime, loop, network=False, spec=SERVERS) for _ in range(2))
    try:
        assert_private(a, b, {"/run/holm": runtime.boxes_dir / b.box_id / "run"})
    finally:
        for box in (a, b):
            loop.run(runtime.delete(box.box_id))


SERVE_ON_ALL = textwrap.dedent("""
    import os, socket
    server = socket.create_server(("0.0.0.0", 8123))
    if os.fork() == 0:
        os.setsid()
        quiet = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(quiet, fd)
        while True:
            client, _ = server.accept()
            client.sendall(b"hi")
            client.close()
""")


OWN_ADDRESSES = textwrap.dedent("""
    last = ""
    for line in open("/proc/net/fib_trie"):
        words = line.split()
        if words and words[0] in ("|--", "+--"):
            last = words[1]
        elif "/32 host LOCAL" in line and not last.startswith("127."):
            print(last)
""")


def test_a_docker_box_reaches_no_service_of_another_box_or_of_the_hosts_addresses(
    runtime: DockerRuntime, loop: Loop, online: Box, test_host: FarHost
) -> None:
    """What a local box is kept from: another box's services on its own addresses, and
    the host's services on the host's own addresses: the engine's bridge gateway, the test
    host's veth end, and the host's addresses on its way out, IPv6 too (a docker box with
    the network has IPv6; link-local addresses have a test of their own, below)."""
    other = create(runtime, loop, network=True)
    try:
        other.sh(f"python3 -c '{SERVE_ON_ALL}'")
        assert connect(other, "127.0.0.1", 8123) == "reached hi"  # it does serve
        addresses = set(other.sh(f"python3 -c '{OWN_ADDRESSES}'").split())
        assert addresses
        for address in addresses:
            assert connect(online, address, 8123).startswith("refused"), address
        hosts = [a for a in host_addresses() if not ipaddress.ip_address(a).is_link_local]
        assert test_host.host_address in hosts and "172.17.0.1" in hosts
        for address in hosts:
            with hi_server(address) as port:
                with socket.create_connection((address, port)) as s:
                    assert s.recv(2) == b"hi"  # the host does reach it
                assert connect(online, address, port).startswith("refused"), address
    finally:
        loop.run(runtime.delete(other.box_id))


def test_a_docker_box_reaches_no_link_local_address_of_the_host(online: Box) -> None:
    found = way_out_link_local()
    if found is None:
        pytest.skip("the host has no IPv6 link-local address on its way out")
    address, index = found
    with hi_server(address, index) as port:
        reached = online.exec(f"python3 -c '{LINK_LOCAL}' {address} {port}")
        assert reached.stdout.startswith("refused"), reached
