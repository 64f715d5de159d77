"""A local box is a hostile neighbour: each test here is an attack made from inside a real
box (through its exec, as an agent's command runs), and each must fail. docs/security.md
names the promise each one holds."""

from __future__ import annotations

import hashlib
import ipaddress
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from kits.net import hi_server

from holm.adapters.base import Desktop
from holm.adapters.local.box_ids import range_of
from holm.adapters.local.sandbox import holm_package_dir
from holm.agent.desktop.viewer_socket import MAX_VIEWERS
from holm.wire.actions import Click, Evaluate, EvaluateWhat, OpenUrl
from holm.wire.results import Evaluated
from holm.wire.values import Point

from .conftest import (
    SECRET,
    SECRET_NAME,
    Box,
    FarHost,
    LocalBoxes,
    Loop,
    make_local_runtime,
)

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def online(local: LocalBoxes, test_host: FarHost) -> Iterator[Box]:
    """A box with the network and Chromium, as most boxes are. Made after the test host:
    a box is kept from the host's own addresses that the host has when the box starts."""
    box = local.create(network=True)
    yield box
    local.delete(box)


@pytest.fixture(scope="module")
def bare_runtime(local: LocalBoxes, state_dir: Path) -> LocalBoxes:
    return LocalBoxes(make_local_runtime(state_dir, chromium=False), local.loop)


@pytest.fixture(scope="module")
def offline(bare_runtime: LocalBoxes) -> Iterator[Box]:
    box = bare_runtime.create(network=False)
    yield box
    bare_runtime.delete(box)


# Nothing of the server leaks into a box

EVERY_ENVIRON = "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f 2>/dev/null; echo; done; env"


def test_no_process_of_a_box_holds_a_variable_of_the_servers(
    local: LocalBoxes, online: Box, offline: Box
) -> None:
    # The secret is there to leak: the test process (holmd's stand-in) has it.
    assert os.environ[SECRET_NAME] == SECRET
    for box in (online, offline):
        seen = box.sh(EVERY_ENVIRON)
        assert SECRET not in seen and SECRET_NAME not in seen
        # The box did read environments: its shell's, its agent's, its desktop's.
        assert seen.count("HOME=/home/box") >= 3, seen
        # From the host, every process of the box, PID 1 (bwrap) included, and the
        # launcher holmd started it with.
        record = local.record(box)
        pids = [*local.pids(box), record.bwrap_pid]
        environs = {pid: Path(f"/proc/{pid}/environ").read_bytes() for pid in pids if pid}
        assert len(environs) >= 4
        assert all(SECRET.encode() not in environ for environ in environs.values())
        assert b"HOME=/home/box" in environs[record.init_pid or 0]


# A box has its own network namespace

CONNECT = textwrap.dedent("""
    import socket, sys
    try:
        with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10) as s:
            print("reached", s.recv(2).decode())
    except OSError as exc:
        print("refused", exc)
""")


def connect(box: Box, address: str, port: int) -> str:
    result = box.exec(f"python3 -c '{CONNECT}' {address} {port}")
    assert result.code == 0, result
    return result.stdout.strip()


ABSTRACT = textwrap.dedent("""
    import socket, sys
    try:
        socket.socket(socket.AF_UNIX).connect("\\0" + sys.argv[1])
        print("reached")
    except OSError as exc:
        print("refused", exc)
""")


def test_no_box_reaches_the_hosts_loopback(online: Box, offline: Box, loopback_server: int) -> None:
    with socket.create_connection(("127.0.0.1", loopback_server)) as s:
        assert s.recv(2) == b"hi"  # the host does reach it
    # Nor the host's abstract Unix sockets (an X server's among them): they belong to a
    # network namespace.
    name = f"holm-test-{os.urandom(4).hex()}"
    with socket.socket(socket.AF_UNIX) as abstract:
        abstract.bind("\0" + name)
        abstract.listen()
        with socket.socket(socket.AF_UNIX) as probe:
            probe.connect("\0" + name)  # the host does reach it
        for box in (online, offline):
            for address in ("127.0.0.1", "localhost"):
                assert connect(box, address, loopback_server).startswith("refused"), box
            assert box.sh(f"python3 -c '{ABSTRACT}' {name}").startswith("refused"), box


FETCH = textwrap.dedent("""
    import hashlib, sys, time, urllib.request
    with urllib.request.urlopen(sys.argv[1], timeout=30) as answer:
        body = answer.read()
    print(len(body), hashlib.sha256(body).hexdigest())
""")


def test_a_box_with_the_network_reaches_a_host_out_there_but_none_of_this_hosts_addresses(
    online: Box, test_host: FarHost
) -> None:
    url = f"http://{test_host.address}:{test_host.http_port}/payload"
    fetched = online.sh(f"python3 -c '{FETCH}' {url}").split()
    assert fetched == [str(len(test_host.payload)), hashlib.sha256(test_host.payload).hexdigest()]
    # The host's end of the veth is one of the host's own addresses: a service bound there
    # (or to all addresses) answers the host, not the box.
    with socket.create_connection((test_host.host_address, test_host.host_side_port)) as s:
        assert s.recv(2) == b"hi"
    assert connect(online, test_host.host_address, test_host.host_side_port).startswith("refused")


LINK_LOCAL = textwrap.dedent("""
    import socket, sys
    index = next(i for i, name in socket.if_nameindex() if name != "lo")
    with socket.socket(socket.AF_INET6) as s:
        s.settimeout(10)
        try:
            s.connect((sys.argv[1], int(sys.argv[2]), 0, index))
            print("reached", s.recv(2).decode())
        except OSError as exc:
            print("refused", exc)
""")


def way_out_link_local() -> tuple[str, int] | None:
    """The host's own link-local IPv6 address on the interface of its default route (the
    one pasta takes a box's packets out by), with that interface's index."""
    with open("/proc/net/route") as f:
        ways = [w[0] for w in (line.split() for line in f) if w[1:2] == ["00000000"]]
    with open("/proc/net/if_inet6") as f:
        for raw, index, _, scope, _, name in (line.split() for line in f):
            if name in ways and scope == "20":
                return str(ipaddress.IPv6Address(int(raw, 16))), int(index, 16)
    return None


def test_a_box_with_the_network_reaches_no_link_local_address_of_the_host(online: Box) -> None:
    """pasta takes the host's own `fe80::…` from the box to the host; an interface-bound
    lookup (a link-local address and its zone) passes over an `unreachable` route."""
    found = way_out_link_local()
    if found is None:
        pytest.skip("the host has no IPv6 link-local address on its way out")
    address, index = found
    with hi_server(address, index) as port:
        with socket.socket(socket.AF_INET6) as s:
            s.connect((address, port, 0, index))
            assert s.recv(2) == b"hi"  # the host does reach it
        reached = online.exec(f"python3 -c '{LINK_LOCAL}' {address} {port}")
        assert reached.stdout.startswith("refused"), reached


def test_a_box_without_the_network_reaches_nothing(
    offline: Box, test_host: FarHost, loopback_server: int
) -> None:
    assert connect(offline, test_host.address, test_host.http_port).startswith("refused")
    interfaces = offline.sh("tail -n +3 /proc/net/dev | cut -d: -f1").split()
    assert interfaces == ["lo"]
    assert offline.sh("tail -n +2 /proc/net/route") == ""


# A box sees nothing of the host, the server or another box

LOOK = textwrap.dedent("""
    for p in /etc/shadow /root /etc/ssl/private /work /var/lib /var/log /etc/sudoers "$@"; do
        test -e "$p" && echo "seen $p"
    done
    cat /etc/shadow 2>/dev/null && echo "read /etc/shadow"
    grep -rlsF "$TOKEN" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr \\
        --exclude-dir=dev && echo "found the token"
    true
""")


def test_a_box_reads_no_other_box_no_state_no_trace_and_no_host_secret(
    online: Box, offline: Box, state_dir: Path
) -> None:
    token = f"token-{os.urandom(6).hex()}"
    offline.sh(f"echo {token} > /home/box/neighbours-secret.txt")
    home_of_offline = state_dir / "boxes" / offline.box_id / "home"
    assert (home_of_offline / "neighbours-secret.txt").read_text().strip() == token
    # A trace and a blob of the server's, where its store keeps them.
    (state_dir / "traces").mkdir(exist_ok=True)
    (state_dir / "traces" / f"{offline.box_id}.jsonl").write_text(f'{{"note":"{token}"}}\n')
    paths = [str(state_dir), str(home_of_offline), str(state_dir / "traces")]
    script = f"TOKEN={token}; set -- {' '.join(paths)}; {LOOK}"
    assert online.sh(script) == ""
    # And the home of the box itself is all it has of the state dir.
    assert online.sh("ls -a /home/box /run/holm | sort -u").split() != []
    assert "neighbours-secret.txt" not in online.sh("ls -aR /home /run /tmp /opt 2>/dev/null")


def test_a_box_sees_none_of_the_hosts_processes(local: LocalBoxes, online: Box) -> None:
    seen = online.sh(
        "for d in /proc/[0-9]*; do echo \"${d#/proc/} $(tr '\\0' ' ' < $d/cmdline)\"; done"
    )
    commands = dict(line.split(" ", 1) for line in seen.strip().splitlines())
    assert commands["1"].startswith("bwrap")
    assert not any("pytest" in c or "holm-join" in c for c in commands.values()), commands
    # As many as the box has on the host (give or take the listing shell and its children).
    assert len(commands) <= len(local.pids(online)) + 4
    assert all(int(pid) < 1000 for pid in commands)


def test_a_page_in_a_box_finds_nothing_of_the_agents_click_listener(online: Box) -> None:
    """The agent's tab watch puts a binding and a listener in the box's pages, in a world
    of its own (docs/security.md, "The click listener"): the page's scripts, at their
    start, on a click and after it, find no binding to call."""
    page = (
        "data:text/html,<script>window.seen = [typeof __holmLanded];"
        "addEventListener('pointerdown', () => seen.push(typeof __holmLanded), true);</script>"
        "<body style='height:100vh'>"
    )
    looked = "[...seen, typeof __holmLanded, Object.keys(window).filter(k => /holm/i.test(k))]"

    async def evaluate(desktop: Desktop, expression: str) -> object:
        seen = await desktop.act(0, Evaluate(what=EvaluateWhat(expression=expression)))
        assert isinstance(seen, Evaluated)
        return seen.value

    async def look() -> object:
        desktop = await online.runtime.desktop(online.box_id)
        await desktop.act(0, OpenUrl(url=page))
        # A click sent as the page first shows may come before it takes input (seen once
        # under CI's load): click again until the page has seen one.
        for _ in range(10):
            await desktop.act(0, Click(at=Point(x=640, y=500)))
            if await evaluate(desktop, "seen.length") != 1:
                break
        return await evaluate(desktop, looked)

    *kinds, keys = online.loop.run(look())
    assert keys == [] and len(kinds) >= 3 and set(kinds) == {"undefined"}, kinds


# A box is not root on the host


def test_a_box_is_not_root_on_the_host(local: LocalBoxes, online: Box, state_dir: Path) -> None:
    assert online.sh("id -u; echo probe > /home/box/owner-probe").strip() == "0"
    probe = state_dir / "boxes" / online.box_id / "home" / "owner-probe"
    owner = os.stat(probe)
    assert owner.st_uid != 0 and owner.st_gid != 0
    assert owner.st_uid == local.record(online).box_uid
    assert range_of(owner.st_uid) is not None
    record = local.record(online)
    pids = [*local.pids(online), record.net_pid or 0]
    assert record.net_pid is not None and len(pids) >= 5
    for pid in pids:
        status = Path(f"/proc/{pid}/status").read_text()
        uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
        assert "0" not in uids, (pid, status)
    # Root in the box holds CAP_SETGID, and that only over the box's own ids.
    assert online.sh("grep CapEff /proc/self/status").split()[1] == f"{1 << 6:016x}"
    assert online.exec("touch /etc/passwd").code != 0


def test_a_box_leaves_no_bytecode_in_the_agents_code(online: Box) -> None:
    """The agent's bytecode, which holmd writes beside the agent's code (agent_bytecode.py),
    is as read-only to a box as the code: no box leaves bytecode that another box, or
    holmd, would run."""
    cache = "/opt/holm/src/holm/__pycache__"
    # holmd's own bytecode of a module every box imports, and a file of the box's own.
    for target in (f"{cache}/errors.cpython-311.pyc", f"{cache}/planted.pyc"):
        written = online.exec(f"echo planted > {target}")
        assert written.code != 0 and "Read-only file system" in written.stderr, written
    host_cache = holm_package_dir() / "__pycache__"
    assert not (host_cache / "planted.pyc").exists()
    pyc = host_cache / "errors.cpython-311.pyc"
    assert not pyc.exists() or b"planted" not in pyc.read_bytes()


# A box that takes what the kernel counts per user leaves the other boxes theirs

# Holds every inotify instance the kernel lets its user have, says how many, and keeps
# them until it is killed.
HOLD_INOTIFY = textwrap.dedent("""
    import ctypes, errno, os, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    held = []
    while len(held) < 100_000:
        fd = libc.inotify_init()
        if fd < 0:
            break
        held.append(fd)
    with open(sys.argv[1] + ".tmp", "w") as out:
        out.write(f"{os.getpid()} {len(held)} {errno.errorcode[ctypes.get_errno()]}")
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(120)
""")
ONE_INOTIFY = (
    "import ctypes; fd = ctypes.CDLL(None, use_errno=True).inotify_init(); "
    "print('opened' if fd >= 0 else 'refused', ctypes.get_errno())"
)


def test_a_box_that_holds_every_inotify_instance_leaves_another_box_its_own(
    local: LocalBoxes, online: Box, offline: Box
) -> None:
    """The kernel counts inotify instances per host uid (fs.inotify.max_user_instances),
    and no namespace splits that count; each box has a range of host ids of its own
    (box_ids.py), so a box that takes them all takes only its own."""
    assert range_of(local.record(online).host_uid) != range_of(local.record(offline).host_uid)
    script = online.sh("mktemp").strip()
    online.sh(f"cat > {script} << 'EOF'\n{HOLD_INOTIFY}\nEOF")
    online.sh(f"setsid python3 {script} /tmp/held < /dev/null > /dev/null 2>&1 &")
    try:
        held = online.sh(
            "for i in $(seq 100); do test -e /tmp/held && break; sleep 0.1; done; cat /tmp/held"
        )
        _, count, error = held.split()
        limit = int(Path("/proc/sys/fs/inotify/max_user_instances").read_text())
        assert error == "EMFILE" and 0 < int(count) <= limit, held
        # The box itself can open no more (its own programs share its range).
        assert online.sh(f'python3 -c "{ONE_INOTIFY}"').split()[0] == "refused"
        assert offline.sh(f'python3 -c "{ONE_INOTIFY}"').split()[0] == "opened"
    finally:
        online.exec("test -e /tmp/held && kill $(cut -d' ' -f1 /tmp/held)")


# A box that opens its own viewer socket over and over

# Run in the box: opens `argv[1]` connections to screen 0's viewer socket at once and
# prints, for each, what it was greeted with (or `closed`), then closes them all.
FLOOD_VIEWERS = textwrap.dedent("""
    import socket, sys
    opened = []
    for _ in range(int(sys.argv[1])):
        s = socket.socket(socket.AF_UNIX)
        s.connect("/run/holm/vnc-0.sock")
        s.settimeout(20)
        opened.append(s)
    for s in opened:
        try:
            print(s.recv(12).decode().strip() or "closed")
        except OSError as exc:
            print(type(exc).__name__)
    for s in opened:
        s.close()
""")


def test_a_box_flooding_its_viewer_socket_gets_at_most_16_vnc_servers(
    online: Box,
) -> None:
    """The box's agent starts an x11vnc per connection to a screen's viewer socket
    (viewer_socket.py); a box that opens it again and again gets no more than
    MAX_VIEWERS of them at once, the other connections closed unserved."""
    seen = online.sh(f"python3 -c '{FLOOD_VIEWERS}' {MAX_VIEWERS + 4}").split("\n")[:-1]
    assert seen == ["RFB 003.008"] * MAX_VIEWERS + ["closed"] * 4, seen


# A fork bomb stops at the box's pids limit

PIDS_MAX = 160
FORK_LOOP = textwrap.dedent("""
    import errno, os, signal, sys
    children, error = [], "none"
    for _ in range(int(sys.argv[1])):
        try:
            pid = os.fork()
        except OSError as exc:
            error = errno.errorcode[exc.errno]
            break
        if pid == 0:
            signal.pause()
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    for pid in children:
        os.waitpid(pid, 0)
    print(len(children), error)
""")


def test_a_fork_bomb_stops_at_the_boxs_pids_limit(loop: Loop, state_dir: Path) -> None:
    boxes = LocalBoxes(make_local_runtime(state_dir, chromium=False, pids_max=PIDS_MAX), loop)
    assert boxes.runtime.cgroups.pids, "this machine gives the local runtime no pids cgroup"
    box = boxes.create(network=False)
    try:
        limits = [Path(p).parent / "pids.max" for p in boxes.record(box).cgroups]
        assert [f.read_text().strip() for f in limits if f.exists()] == [str(PIDS_MAX)]
        bound = 10 * PIDS_MAX
        forked, error = box.sh(f"python3 -c '{FORK_LOOP}' {bound}").split()
        assert error == "EAGAIN" and int(forked) < PIDS_MAX
        # The host forks as before, and so does the box once its children are gone.
        assert subprocess.run(["true"]).returncode == 0
        assert box.sh("echo alive") == "alive\n"
    finally:
        boxes.delete(box)
        loop.run(boxes.runtime.close())


# Another local user

AS_NOBODY = textwrap.dedent("""
    import socket, sys
    for path in sys.argv[1:]:
        try:
            if path.endswith(".sock"):
                socket.socket(socket.AF_UNIX).connect(path)
            else:
                open(path).read()
            print("reached", path)
        except OSError as exc:
            print("refused", type(exc).__name__)
""")


def test_another_local_user_reaches_no_box_socket_and_no_box_file(
    online: Box, state_dir: Path
) -> None:
    box_dir = state_dir / "boxes" / online.box_id
    online.sh("echo private > /home/box/private.txt")
    for folder in (box_dir / "home", box_dir / "run"):
        assert folder.stat().st_mode & 0o777 == 0o700
    # Even with every folder above them open to others (a state dir need not be), the
    # box's own folders keep another user out of the agent, the viewer and the files.
    above = (state_dir, state_dir / "boxes", box_dir)
    modes = {path: path.stat().st_mode & 0o7777 for path in above}
    for path in above:
        path.chmod(modes[path] | 0o711)
    try:
        targets = [box_dir / "run" / "agent.sock", box_dir / "run" / "vnc-0.sock"]
        targets.append(box_dir / "home" / "private.txt")
        assert all(t.exists() for t in targets)
        done = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
                sys.executable,
                "-c",
                AS_NOBODY,
                *map(str, targets),
            ],
            capture_output=True,
            text=True,
        )
        assert done.stdout.split("\n")[:3] == ["refused PermissionError"] * 3, done
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
