"""An X11 box's image (the docker runtime's) has no pywayland: the agent must start there,
so nothing it imports for an X11 screen may import pywayland (the Wayland wing imports it
when a Wayland screen connects)."""

from __future__ import annotations

import subprocess
import sys

BLOCKED = """
import sys

class NoPywayland:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pywayland":
            raise ModuleNotFoundError(f"No module named {name!r}")

sys.meta_path.insert(0, NoPywayland())
import holm.agent.__main__, holm.agent.server  # what the image's build imports, and more
assert not any(name.startswith("pywayland") for name in sys.modules)
"""


def test_the_agent_imports_without_pywayland() -> None:
    done = subprocess.run([sys.executable, "-c", BLOCKED], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
