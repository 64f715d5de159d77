"""The way a Wayland screen's Chromium reaches its sway (holm/agent/wayland/maximised_proxy.py):
the same globals as sway's own socket, but xdg_wm_base at version 1, which has sway tell
Chromium's tiled window it is maximised."""

from __future__ import annotations

import array
import glob
import os
import socket
import struct
import threading
from typing import Any

import pytest
from agent_kit import RunningAgent
from pywayland.client.display import Display

from holm.agent.wayland.maximised_proxy import Relay


def offered(path: str) -> dict[str, int]:
    """The globals a client connected at `path` is offered, by interface, with their
    versions (the first of each)."""
    display = Display(path)
    display.connect()
    found: dict[str, int] = {}

    def on_global(_registry: Any, _name: int, interface: str, version: int) -> None:
        found.setdefault(interface, version)

    registry = display.get_registry()
    registry.dispatcher["global"] = on_global
    display.roundtrip()
    registry._destroy()
    display.disconnect()
    return found


@pytest.mark.desktop
async def test_chromium_is_offered_sways_globals_with_xdg_wm_base_at_version_1(
    wayland_agent: RunningAgent, desktop: Any
) -> None:
    (sway_socket,) = [
        p
        for p in glob.glob(f"/tmp/holm-wayland/{wayland_agent.proc.pid}-0/wayland-*")
        if not p.endswith(".lock")
    ]
    relay = wayland_agent.run_dir / "wayland-chromium-0.sock"

    direct, relayed = offered(sway_socket), offered(str(relay))

    # sway 1.7 offers version 2 (the tiled states); to a client of version 1 it sends
    # `maximized` in their place.
    assert direct["xdg_wm_base"] >= 2
    assert relayed == {**direct, "xdg_wm_base": 1}
    assert relay.stat().st_mode & 0o777 == 0o600


def message(obj: int, opcode: int, body: bytes) -> bytes:
    return struct.pack("=II", obj, (8 + len(body)) << 16 | opcode) + body


def global_event(registry: int, name: int, interface: bytes, version: int) -> bytes:
    text = interface + b"\0"
    padded = text + b"\0" * (-len(text) % 4)
    return message(
        registry, 0, struct.pack("=II", name, len(text)) + padded + struct.pack("=I", version)
    )


def test_the_relay_lowers_xdg_wm_base_only_and_passes_messages_split_and_descriptors() -> None:
    chromium, relay_client = socket.socketpair()
    relay_server, sway = socket.socketpair()
    relay = Relay(relay_client, relay_server)
    relay.start()
    try:
        # get_registry(new_id 2) from the client, then sway's globals on registry 2 and on
        # another object, the second message arriving in two parts.
        chromium.sendall(message(1, 1, struct.pack("=I", 2)))
        assert sway.recv(100) == message(1, 1, struct.pack("=I", 2))
        seat = global_event(2, 36, b"wl_seat", 7)
        wm_base = global_event(2, 10, b"xdg_wm_base", 2)
        elsewhere = global_event(5, 10, b"xdg_wm_base", 2)
        sway.sendall(seat + wm_base[:10])
        sway.sendall(wm_base[10:] + elsewhere)
        got = b""
        while len(got) < len(seat + wm_base + elsewhere):
            got += chromium.recv(1000)
        assert got == seat + global_event(2, 10, b"xdg_wm_base", 1) + elsewhere
        # A descriptor sent with a request arrives with it, open on the same file.
        read_end, write_end = os.pipe()
        request = message(7, 0, b"\0" * 4)
        chromium.sendmsg(
            [request],
            [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [write_end]).tobytes())],
        )
        os.close(write_end)
        data, fds, _, _ = socket.recv_fds(sway, 100, 4)
        assert data == request and len(fds) == 1
        os.write(fds[0], b"through")
        os.close(fds[0])
        assert os.read(read_end, 10) == b"through"
        os.close(read_end)
    finally:
        chromium.close()
        sway.close()
    # Either side's end ends both directions, and the relay's own sockets are closed.
    for _ in range(100):
        if not relay.running:
            break
        threading.Event().wait(0.05)
    assert not relay.running
    assert relay_client.fileno() == -1 and relay_server.fileno() == -1
