"""The way a Wayland screen's Chromium reaches its sway (holm/agent/wayland/maximised_proxy.py):
the same globals as sway's own socket, but xdg_wm_base at version 1, which has sway tell
Chromium's tiled window it is maximised."""

from __future__ import annotations

import glob
from typing import Any

import pytest
from agent_kit import RunningAgent
from pywayland.client.display import Display

pytestmark = pytest.mark.desktop


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
