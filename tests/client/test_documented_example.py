"""The Python example of docs/cli.md is what a user copies first: each name it imports
exists where it says, and each call it makes on the client is a method of both clients."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from holm.client import HolmClient, SyncHolmClient

CLI_MD = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _example() -> ast.Module:
    # The client's example; the page's other one, of `Box`, is what tests/client/test_box.py runs.
    blocks = re.findall(r"```python\n(.*?)```", CLI_MD.read_text(), re.S)
    [block] = [b for b in blocks if "from holm.client import" in b]
    # `async with` at the top, as a user types it into `python -m asyncio`.
    tree: ast.Module = compile(
        block, str(CLI_MD), "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    )
    return tree


def test_every_name_the_example_imports_exists() -> None:
    imports = [node for node in ast.walk(_example()) if isinstance(node, ast.ImportFrom)]
    assert imports
    missing = [
        f"{node.module}.{alias.name}"
        for node in imports
        for alias in node.names
        if not hasattr(importlib.import_module(node.module or ""), alias.name)
    ]
    assert not missing


def test_every_call_on_the_client_is_a_method_of_both_clients() -> None:
    called = {
        node.func.attr
        for node in ast.walk(_example())
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "holm"
    }
    assert called
    assert {name for name in called if not hasattr(HolmClient, name)} == set()
    assert {name for name in called if not hasattr(SyncHolmClient, name)} == set()
