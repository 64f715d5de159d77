"""The tests say a thing once (issue 34, point 3): no test module or conftest edits
sys.path (the kits are importable through pyproject's pytest `pythonpath`), and a bench
imports nothing of tests/ but tests/kits."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
BENCH = ROOT / "bench"


def edits_of_sys_path(tree: ast.AST) -> list[int]:
    """The lines that change sys.path: a call of one of its methods, or an assignment to it
    or to a slice of it."""

    def is_sys_path(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        )

    lines = []
    for node in ast.walk(tree):
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Attribute) and is_sys_path(func.value):
            lines.append(node.lineno)
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign):
            targets = [node.target]
        for target in targets:
            if is_sys_path(target) or (
                isinstance(target, ast.Subscript) and is_sys_path(target.value)
            ):
                lines.append(node.lineno)
    return sorted(lines)


def test_no_test_edits_sys_path() -> None:
    edits = {
        str(path.relative_to(ROOT)): lines
        for path in sorted(TESTS.rglob("*.py"))
        if (lines := edits_of_sys_path(ast.parse(path.read_text())))
    }
    assert edits == {}


def test_the_check_sees_every_way_of_editing_sys_path() -> None:
    # So that the test above cannot pass by looking for the wrong thing.
    source = "import sys\nsys.path.insert(0, 'a')\nsys.path[:0] = ['b']\nsys.path += ['c']\n"
    assert edits_of_sys_path(ast.parse(source)) == [2, 3, 4]


def imported_names(path: Path) -> set[str]:
    """The top-level names of what `path` imports, anywhere in it (a bench imports some
    lazily inside its functions)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_bench_imports_a_test_module() -> None:
    benches = {path.stem for path in BENCH.glob("*.py")}
    # What tests/ holds that a bench could import once it put tests/ (or one of its
    # folders) on its path: every module there but the kits. (Its folders are no packages:
    # `mcp` or `docker` in a bench is the library.)
    of_tests = {
        path.stem
        for path in TESTS.rglob("*.py")
        if "kits" not in path.relative_to(TESTS).parts and path.stem not in {"__init__", "conftest"}
    }
    # The areas' own kits are among them (http_kit, …): the check looks where a bench would.
    assert {"http_kit", "trace_kit", "e2e_kit"} <= of_tests
    # A bench's own module of the same name is the bench's (bench/ comes first on its path).
    imports = {
        str(path.relative_to(ROOT)): sorted((imported_names(path) & of_tests) - benches)
        for path in sorted(BENCH.glob("*.py"))
    }
    assert {bench: names for bench, names in imports.items() if names} == {}
    assert any("kits" in imported_names(path) for path in BENCH.glob("*.py"))
