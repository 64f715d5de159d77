"""The box's accessibility bus (agent/a11y_bus.py) brought up for real, by the interpreter a
box runs (/usr/bin/python3, which has python3-gi): the launcher found on the session bus,
and no GLib binding left in the agent's memory for it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from agent_kit import SYSTEM_PYTHON, agent_env

pytestmark = pytest.mark.desktop

# Run in a fresh interpreter, so that what it has imported is what bring-up imported.
BRING_UP = """
import json, sys
from pathlib import Path
from holm.agent.widgets import a11y_bus
from holm.agent.desktop import processes
run_dir = Path(sys.argv[1])
if len(sys.argv) > 2:
    a11y_bus.DBUS_DAEMON = sys.argv[2]
try:
    address = a11y_bus.start(run_dir, {"PATH": "/usr/bin:/bin", "HOME": str(run_dir)})
    print(json.dumps({
        "launcher": a11y_bus._has_owner(address, a11y_bus.A11Y_BUS_NAME),
        "nobody": a11y_bus._has_owner(address, "org.holm.Nobody"),
        "gi": sorted(m for m in sys.modules if m == "gi" or m.startswith("gi.")),
    }))
finally:
    processes.end_all()
"""


# A session bus whose socket's file is there a second before it listens (bound, not yet
# listening), as dbus-daemon's is for a moment between its bind and its listen.
LATE_LISTENER = """#!/usr/bin/python3
import os, socket, sys, time
path = next(a.split("=", 2)[2] for a in sys.argv if a.startswith("--address=unix:path="))
early = socket.socket(socket.AF_UNIX)
early.bind(path)
time.sleep(1.0)
early.close()
os.unlink(path)
os.execv("/usr/bin/dbus-daemon", ["/usr/bin/dbus-daemon", *sys.argv[1:]])
"""


def bring_up(tmp_path: Path, *daemon: str) -> dict[str, object]:
    done = subprocess.run(
        [SYSTEM_PYTHON, "-c", BRING_UP, str(tmp_path), *daemon],
        env=agent_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def test_the_bus_comes_up_and_is_asked_without_glib(tmp_path: Path) -> None:
    assert bring_up(tmp_path) == {"launcher": True, "nobody": False, "gi": []}


def test_the_launcher_starts_once_the_session_bus_listens_not_when_its_file_is_there(
    tmp_path: Path,
) -> None:
    daemon = tmp_path / "late-dbus-daemon"
    daemon.write_text(LATE_LISTENER)
    daemon.chmod(0o755)
    assert bring_up(tmp_path, str(daemon)) == {"launcher": True, "nobody": False, "gi": []}


def test_a_bus_that_is_not_there_has_no_owner(tmp_path: Path) -> None:
    from holm.agent.widgets import a11y_bus

    assert not a11y_bus._has_owner(f"unix:path={tmp_path / 'none.sock'}", "org.a11y.Bus")
