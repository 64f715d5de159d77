"""The box's accessibility bus (the `accessibility` feature): a D-Bus session bus of the
box's own, and AT-SPI's bus launcher on it, each a child of the agent.

Applications find the accessibility bus through the session bus (`org.a11y.Bus`), so every
program the box starts gets `DBUS_SESSION_BUS_ADDRESS`; GTK loads its bridge to the bus
unless `NO_AT_BRIDGE` is set, and Chromium shows its pages' widgets only when told to.

Everything here blocks; the agent runs it in a thread.
"""

from __future__ import annotations

import os
import select
import time
from pathlib import Path

from holm.agent.desktop import commands, processes

DBUS_DAEMON = "/usr/bin/dbus-daemon"
BUS_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
DBUS_SEND = "/usr/bin/dbus-send"
START_S = 10.0
# How long one question to the session bus may take.
ASK_MS = 2000
A11Y_BUS_NAME = "org.a11y.Bus"

# A box without the feature: GTK programs would otherwise look for a bus that is not there
# (and warn about it on every start).
WITHOUT = {"NO_AT_BRIDGE": "1"}


class BusFailed(Exception):
    """The session bus or the accessibility bus did not come up; the message says which."""


def env_with(address: str) -> dict[str, str]:
    """What a box's programs need to show their widgets on the bus at `address`: GTK 2's
    bridge is a module to load (GTK 3 loads its own), Chromium wants the variable as well
    as its flag (desktop_up.py)."""
    return {
        "DBUS_SESSION_BUS_ADDRESS": address,
        "GTK_MODULES": "gail:atk-bridge",
        "ACCESSIBILITY_ENABLED": "1",
    }


def start(run_dir: Path, env: dict[str, str]) -> str:
    """Start the session bus and the accessibility bus launcher; return the session bus's
    address once the launcher holds its name there (an application started before would
    have D-Bus activate a second launcher)."""
    socket = run_dir / "session-bus.sock"
    socket.unlink(missing_ok=True)
    address = f"unix:path={socket}"
    deadline = time.monotonic() + START_S
    # The daemon prints its address once it listens. Its socket's file comes earlier, at
    # bind: a launcher that connected between the two was refused and ended (CI: "Failed
    # to connect to session bus").
    argv = [DBUS_DAEMON, "--session", "--nofork", "--nopidfile", f"--address={address}"]
    ready, told = os.pipe()
    try:
        try:
            bus = processes.spawn(
                [*argv, f"--print-address={told}"],
                env=env,
                log_path=run_dir / "dbus.log",
                pass_fds=(told,),
            )
        finally:
            # Only the daemon holds it now, so its end ends the pipe.
            os.close(told)
        processes.supervise("the session bus (dbus-daemon)", bus)
        if not _told_address(ready, deadline):
            raise BusFailed(f"the session bus did not start (see {run_dir / 'dbus.log'})")
    finally:
        os.close(ready)
    os.chmod(socket, 0o600)
    launcher = processes.spawn(
        [BUS_LAUNCHER, "--launch-immediately"],
        env={**env, "DBUS_SESSION_BUS_ADDRESS": address},
        log_path=run_dir / "at-spi.log",
    )
    processes.supervise("the accessibility bus (at-spi-bus-launcher)", launcher)
    while not _has_owner(address, A11Y_BUS_NAME):
        if launcher.poll() is not None or time.monotonic() > deadline:
            raise BusFailed(f"the accessibility bus did not start (see {run_dir / 'at-spi.log'})")
        time.sleep(0.05)
    return address


def _told_address(ready: int, deadline: float) -> bool:
    """Whether the daemon wrote a line (its address) on `ready` before `deadline`; False
    when it ended first (the pipe's end came) or the deadline passed."""
    said = b""
    while b"\n" not in said:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([ready], [], [], left)[0]:
            return False
        chunk = os.read(ready, 512)
        if not chunk:
            return False
        said += chunk
    return True


def _has_owner(address: str, name: str) -> bool:
    # Asked with dbus-send (dbus-daemon's package brings it) rather than GLib's D-Bus
    # through python3-gi: importing that kept ~4 MiB of the agent's memory for the box's
    # whole life, for this one question at its start (docs/agent.md, Memory).
    argv = [DBUS_SEND, f"--bus={address}", "--print-reply=literal", "--reply-timeout=1000"]
    argv += ["--dest=org.freedesktop.DBus", "/org/freedesktop/DBus"]
    argv += ["org.freedesktop.DBus.NameHasOwner", f"string:{name}"]
    done = commands.run(argv, ASK_MS, home="/", env={})
    return done.code == 0 and done.stdout.split() == ["boolean", "true"]


__all__ = ["WITHOUT", "BusFailed", "env_with", "start"]
