"""A box's own servers are its own: box A reaches neither the D-Bus session bus, nor the
AT-SPI bus, nor the PulseAudio server of box B, by the addresses B's programs use nor by
where B's folders are on the host. What A reaches at B's addresses is its own (another bus
id, no sink of B's), and B reaches its own there (the probe works). docs/security.md names
this promise; tests/security/test_docker_box.py holds it for docker boxes."""

from __future__ import annotations

import json
import secrets
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from holm.wire.spec import DesktopSpec, Placement, Policy, Spec

from .conftest import Box, LocalBoxes, make_local_runtime

pytestmark = pytest.mark.desktop

# The features whose servers a box runs: the session and accessibility buses, the sound server.
SERVERS = Spec(
    desktop=DesktopSpec(features=["accessibility", "audio"]), policy=Policy(network=False)
)

# B's own: its buses' addresses and ids (the accessibility bus's address is what the
# session bus's `org.a11y.Bus` answers, as applications find it), its sound server's.
OWN = textwrap.dedent("""
    import json, os
    from gi.repository import Gio, GLib
    FLAGS = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
             | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
    def call(address, name, path, iface, method):
        conn = Gio.DBusConnection.new_for_address_sync(address, FLAGS, None, None)
        try:
            return conn.call_sync(name, path, iface, method, None, None,
                                  Gio.DBusCallFlags.NONE, 5000, None).unpack()[0]
        finally:
            conn.close_sync(None)
    session = os.environ["DBUS_SESSION_BUS_ADDRESS"]
    a11y = call(session, "org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress")
    bus_id = lambda address: call(address, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                  "org.freedesktop.DBus", "GetId")
    print(json.dumps({"session": [session, bus_id(session)], "a11y": [a11y, bus_id(a11y)],
                      "pulse": os.environ["PULSE_SERVER"]}))
""")

# What a box reaches at each address: a bus's id, the sinks of a sound server, or why not.
PROBE = textwrap.dedent("""
    import json, subprocess, sys
    from gi.repository import Gio
    FLAGS = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
             | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
    targets = json.loads(sys.argv[1])
    reached = {}
    for address in targets["buses"]:
        try:
            conn = Gio.DBusConnection.new_for_address_sync(address, FLAGS, None, None)
            reached[address] = conn.call_sync(
                "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "GetId", None, None, Gio.DBusCallFlags.NONE, 5000, None).unpack()[0]
            conn.close_sync(None)
        except Exception as exc:
            reached[address] = "refused " + type(exc).__name__
    for address in targets["sound"]:
        done = subprocess.run(["pactl", "-s", address, "list", "short", "sinks"],
                              capture_output=True, text=True, timeout=20)
        reached[address] = done.stdout if done.returncode == 0 else "refused"
    print(json.dumps(reached))
""")


@dataclass
class Servers:
    """A box's buses (address and id) and sound server (its address, and a sink only it
    has)."""

    buses: dict[str, str]
    sound: str
    sink: str


def servers_of(box: Box) -> Servers:
    own = box.python(OWN)
    assert own.code == 0, own
    found: dict[str, Any] = json.loads(own.stdout)
    sink = f"mark_{secrets.token_hex(6)}"
    box.sh(f"pactl load-module module-null-sink sink_name={sink} >/dev/null")
    return Servers(dict(found[k] for k in ("session", "a11y")), found["pulse"], sink)


def reached_from(box: Box, buses: list[str], sound: list[str]) -> dict[str, str]:
    targets = json.dumps({"buses": buses, "sound": sound})
    done = box.exec(f"python3 -c {quote(PROBE)} {quote(targets)}")
    assert done.code == 0, done
    reached: dict[str, str] = json.loads(done.stdout)
    return reached


def quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def host_addresses(address: str, folders: dict[str, Path]) -> list[str]:
    """`address` (`unix:path=…` or `unix:…`) again at each host folder that a box folder
    of it is: where a process outside B finds the same socket."""
    kind, _, path = address.partition(":")
    path = path.removeprefix("path=").split(",", 1)[0]
    moved = [
        folders[inside] / Path(path).relative_to(inside)
        for inside in folders
        if Path(path).is_relative_to(inside)
    ]
    return [f"unix:path={p}" if "path=" in address else f"{kind}:{p}" for p in moved]


def assert_private(a: Box, b: Box, b_folders: dict[str, Path]) -> None:
    """A reaches none of B's servers; B, probed the same way, reaches its own."""
    theirs = servers_of(b)
    on_host = [h for address in theirs.buses for h in host_addresses(address, b_folders)]
    # B's run folder is on the host: its session bus's socket is there (A must not reach it).
    assert on_host and all(Path(h.split("=", 1)[1]).exists() for h in on_host), on_host
    buses = [*theirs.buses, *on_host]
    sound = [theirs.sound, *host_addresses(theirs.sound, b_folders)]

    from_a = reached_from(a, buses, sound)
    from_b = reached_from(b, list(theirs.buses), [theirs.sound])

    assert from_b == {**theirs.buses, theirs.sound: from_b[theirs.sound]}, from_b
    assert theirs.sink in from_b[theirs.sound]
    assert set(from_a) == set(buses) | set(sound), from_a
    for address in buses:
        assert from_a[address] not in theirs.buses.values(), (address, from_a)
    for address in sound:
        assert theirs.sink not in from_a[address], (address, from_a)


@pytest.fixture(scope="module")
def servers_runtime(local: LocalBoxes, state_dir: Path) -> LocalBoxes:
    return LocalBoxes(make_local_runtime(state_dir, chromium=False), local.loop)


def with_servers(boxes: LocalBoxes) -> Box:
    box_id = f"box_{secrets.token_hex(6)}"
    boxes.loop.run(boxes.runtime.create(box_id, SERVERS, Placement()))
    return Box(boxes.runtime, box_id, boxes.loop)


@pytest.fixture(scope="module")
def two(servers_runtime: LocalBoxes) -> Iterator[tuple[Box, Box]]:
    a, b = with_servers(servers_runtime), with_servers(servers_runtime)
    yield a, b
    servers_runtime.delete(a)
    servers_runtime.delete(b)


def test_a_box_reaches_no_bus_and_no_sound_server_of_another_box(
    two: tuple[Box, Box], state_dir: Path
) -> None:
    a, b = two
    b_dir = state_dir / "boxes" / b.box_id
    assert_private(a, b, {"/run/holm": b_dir / "run", "/home/box": b_dir / "home"})
