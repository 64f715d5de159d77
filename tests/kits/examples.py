"""The scripts of examples/ imported by their path, each under a name of its own: examples/
is not a package and not on the path (`run`, the Playwright MCP example's module, is too
common a name to put there)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example(relative: str, name: str | None = None) -> ModuleType:
    """examples/`relative` as a module named `name` (its file's stem by default), imported
    once per run."""
    name = name or Path(relative).stem
    if name in sys.modules:
        return sys.modules[name]
    found = importlib.util.spec_from_file_location(name, EXAMPLES / relative)
    assert found is not None and found.loader is not None, relative
    module = importlib.util.module_from_spec(found)
    # Registered before it runs, as an import does: its dataclasses look their module up.
    sys.modules[name] = module
    found.loader.exec_module(module)
    return module
