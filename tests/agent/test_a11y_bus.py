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


def test_the_bus_comes_up_and_is_asked_without_glib(tmp_path: Path) -> None:
    done = subprocess.run(
        [SYSTEM_PYTHON, "-c", BRING_UP, str(tmp_path)],
        env=agent_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer == {"launcher": True, "nobody": False, "gi": []}


def test_a_bus_that_is_not_there_has_no_owner(tmp_path: Path) -> None:
    from holm.agent.widgets import a11y_bus

    assert not a11y_bus._has_owner(f"unix:path={tmp_path / 'none.sock'}", "org.a11y.Bus")
