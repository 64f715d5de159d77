"""What a local box can see and reach: the sandbox of `sandbox.py`, run with plain
processes in place of the agent (the same bwrap command line a box gets)."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from holm.adapters.local import procs
from holm.adapters.local.limits import parse_cpus, parse_memory
from holm.adapters.local.records import host_x_displays, pick_display_base
from holm.adapters.local.sandbox import box_env, bwrap_argv, launch

from .conftest import RunInBox, plan

LOOK = """
import json, os
paths = ["/etc/shadow", "/root", "/etc/ssl/private", "/work", "/var/lib", "/var/log"]
paths += ["/etc/sudoers"]
print(json.dumps({
    "seen": {p: os.path.exists(p) for p in paths},
    "var": [os.path.join(d, n) for d, dirs, _ in os.walk("/var") for n in dirs],
    "etc": sorted(os.listdir("/etc")),
    "env": dict(os.environ),
    "home": os.environ["HOME"],
    "pid": os.getpid(),
    "usr_writable": os.access("/usr/bin", os.W_OK) and _try_write("/usr/bin/holm-probe"),
    "caps": [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0],
    "hostname": open("/proc/sys/kernel/hostname").read().strip(),
}))
"""
TRY_WRITE = """
def _try_write(path):
    try:
        open(path, "w").close()
    except OSError:
        return False
    return True
"""


def look(run_in_box: RunInBox, *, network: bool = False) -> dict[str, object]:
    done = run_in_box(TRY_WRITE + LOOK, network=network)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_host_secrets_are_not_in_the_box(run_in_box: RunInBox) -> None:
    seen = look(run_in_box)
    assert seen["seen"] == {
        "/etc/shadow": False,
        "/root": False,
        "/etc/ssl/private": False,
        "/work": False,
        "/var/lib": False,
        "/var/log": False,
        "/etc/sudoers": False,
    }
    # Of /var, the font cache only.
    assert seen["var"] == ["/var/cache", "/var/cache/fontconfig"]
    assert seen["usr_writable"] is False
    assert seen["pid"] != os.getpid()
    assert seen["hostname"] == "holm-box"


def test_root_in_the_box_keeps_no_capability_but_setgid(run_in_box: RunInBox) -> None:
    caps = int(str(look(run_in_box)["caps"]), 16)
    cap_setgid = 1 << 6
    assert caps == cap_setgid
    mount = run_in_box("import os; print(os.system('mount -t tmpfs x /home/box'))")
    assert mount.stdout.strip() not in ("", "0"), mount
    mknod = run_in_box("import os; os.mknod('/tmp/sda', 0o600 | 0o060000, os.makedev(8, 0))")
    assert "PermissionError" in mknod.stderr


def test_holmd_environment_does_not_reach_the_box(run_in_box: RunInBox) -> None:
    os.environ["HOLM_SERVER_TOKEN"] = "secret-of-the-host"
    try:
        env = look(run_in_box)["env"]
    finally:
        del os.environ["HOLM_SERVER_TOKEN"]
    assert isinstance(env, dict)
    assert "secret-of-the-host" not in env.values()
    assert env["HOME"] == "/home/box"


def test_only_network_boxes_get_name_resolution_and_certificates(run_in_box: RunInBox) -> None:
    offline = look(run_in_box, network=False)["etc"]
    online = look(run_in_box, network=True)["etc"]
    assert isinstance(offline, list) and isinstance(online, list)
    assert "resolv.conf" not in offline and "ssl" not in offline
    assert "resolv.conf" in online and "ssl" in online
    assert {"fonts", "passwd", "X11"} <= set(offline)


CONNECT = """
import socket, sys
try:
    with socket.create_connection(("127.0.0.1", {port}), timeout=5) as s:
        print(s.recv(2).decode())
except OSError as exc:
    print("refused:", exc)
"""


def test_no_box_reaches_the_host_loopback(run_in_box: RunInBox, tcp_server: int) -> None:
    # Every box has its own network namespace: 127.0.0.1 there is the box's own, with or
    # without a way out (tests/security shows the way out works).
    offline = run_in_box(CONNECT.format(port=tcp_server), network=False)
    online = run_in_box(CONNECT.format(port=tcp_server), network=True)
    assert offline.stdout.startswith("refused:"), offline
    assert online.stdout.startswith("refused:"), online


WRITE = """
import os
open("/home/box/mine.txt", "w").write("{text}")
open("/tmp/box-scratch-{text}.txt", "w").write("{text}")
print(sorted(os.listdir("/home/box")), os.path.exists("/tmp/box-scratch-{other}.txt"))
"""


def test_each_box_sees_only_its_own_files(run_in_box: RunInBox, state_dir: Path) -> None:
    a = run_in_box(WRITE.format(text="a", other="b"), name="a")
    b = run_in_box(WRITE.format(text="b", other="a"), name="b")
    assert a.stdout.strip() == "['mine.txt'] False"
    assert b.stdout.strip() == "['mine.txt'] False"
    assert (state_dir / "a" / "home" / "mine.txt").read_text() == "a"
    assert (state_dir / "b" / "home" / "mine.txt").read_text() == "b"
    # The box's /tmp is its own tmpfs: nothing of it lands in the host's /tmp.
    assert not Path("/tmp/box-scratch-a.txt").exists()


def test_the_agent_code_is_importable_read_only(run_in_box: RunInBox) -> None:
    code = (
        "import holm.errors as e, msgspec, PIL, Xlib, os;"
        "print(e.__file__, os.access(e.__file__, os.W_OK))"
    )
    done = run_in_box(code)
    assert done.stdout.split() == ["/opt/holm/src/holm/errors.py", "False"], done.stderr


def test_a_launched_sandbox_is_one_tree_that_freezes_thaws_and_ends(state_dir: Path) -> None:
    box = plan(state_dir, "tree", network=False)
    argv = bwrap_argv(box, ["sh", "-c", "sleep 300 & (sleep 301 &) ; exec sleep 302"])
    launched = launch(argv, state_dir / "tree.log", env=box_env(box))
    root, start = launched.init_pid, launched.init_start
    try:
        # init, sh→sleep 302, sleep 300, and sleep 301 orphaned to the init
        for _ in range(1000):
            pids = procs.tree(root, start)
            if len(pids) == 4:
                break
            time.sleep(0.01)
        assert len(pids) == 4, pids
        starts = {pid: stat.start for pid in pids if (stat := procs.read_stat(pid))}
        # The box has its own session: a signal to holmd's process group misses it.
        assert os.getsid(root) != os.getsid(0)

        procs.freeze(root, start)
        assert procs.is_frozen(root, start)
        assert all(procs.is_stopped(pid) for pid in procs.tree(root, start))

        procs.thaw(root, start)
        assert not any(procs.is_stopped(pid) for pid in procs.tree(root, start))

        procs.freeze(root, start)
        procs.end(root, start, grace_s=2.0)
        assert procs.tree(root, start) == []
        assert not any(procs.is_alive(pid, start) for pid, start in starts.items())
        assert launched.process.wait(timeout=10) is not None
    finally:
        procs.send([root], signal.SIGKILL)


def test_a_reused_pid_is_not_taken_for_the_box() -> None:
    me = procs.read_stat(os.getpid())
    assert me is not None
    assert procs.is_alive(me.pid, me.start)
    assert not procs.is_alive(me.pid, me.start + 1)


def test_displays_are_given_out_as_consecutive_free_runs() -> None:
    assert pick_display_base([], 2, first=220, count=20) == 220
    assert pick_display_base([220, 223], 2, first=220, count=20) == 221
    assert pick_display_base([221], 2, first=220, count=20) == 222
    assert pick_display_base(range(220, 238), 2, first=220, count=20) == 238
    assert pick_display_base(range(220, 239), 2, first=220, count=20) is None


def test_an_x_server_of_the_host_network_takes_its_display() -> None:
    # What a network box's Xvfb does: listen on the abstract name of its display.
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("\0/tmp/.X11-unix/X239")
    server.listen()
    try:
        assert 239 in host_x_displays()
    finally:
        server.close()
    assert 239 not in host_x_displays()


def test_box_limits_are_read_as_docker_writes_them() -> None:
    assert parse_memory("512m") == 512 << 20
    assert parse_memory("2g") == 2 << 30
    assert parse_memory("1.5GiB") == 3 << 29
    assert parse_cpus("0.5") == 0.5
    for bad in ("lots", "1m", "-2g", ""):
        with pytest.raises(ValueError):
            parse_memory(bad)
    for bad in ("many", "0", "-1"):
        with pytest.raises(ValueError):
            parse_cpus(bad)
