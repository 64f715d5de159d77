"""One path into a box: every in-box operation is one action with one result, done by one
`case` in the agent (and in the in-memory double), behind a `Desktop` that has nothing but
`act` and frames. These tests list the places, so a second path cannot grow back unseen."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import msgspec

from holm.adapters.base import Desktop
from holm.adapters.memory import desktop as memory_desktop
from holm.adapters.memory import pages as memory_pages
from holm.agent import acts
from holm.engine import Engine
from holm.wire import actions as a
from holm.wire import agent_protocol as protocol
from holm.wire import results as r
from holm.wire.values import Point

BUILT = [cls for cls in a.Action.__args__ if cls.Result is not r.NoResult]


def _cases(module: object) -> list[str]:
    """The class names matched by `case X(...)` patterns in a module's source."""
    tree = ast.parse(Path(inspect.getfile(module)).read_text())  # type: ignore[arg-type]
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.MatchClass):
            cls = node.cls
            names.append(cls.attr if isinstance(cls, ast.Attribute) else ast.unparse(cls))
    return names


def test_every_action_names_one_result_type() -> None:
    results = {cls for cls in vars(r).values() if isinstance(cls, type)} | {Point}
    for action in a.Action.__args__:
        assert action.Result in results, action
        assert issubclass(action.Result, msgspec.Struct), action


def test_the_agent_does_every_built_action_in_one_case() -> None:
    cases = _cases(acts)
    for action in BUILT:
        # `clipboard` has two cases (get, set); every other action has one.
        expected = 2 if action is a.Clipboard else 1
        assert cases.count(action.__name__) == expected, action.__name__


def test_the_memory_double_does_every_built_action() -> None:
    # Split as the agent is: the desktop's one match, its page actions in pages.py.
    cases = _cases(memory_desktop) + _cases(memory_pages)
    for action in BUILT:
        assert action.__name__ in cases, action.__name__


def test_the_agent_protocol_restates_no_action() -> None:
    requests = {cls.__name__ for cls in protocol.Request.__args__}  # type: ignore[attr-defined]
    # AwaitChange: the watcher waits for the screen to be drawn on (DAMAGE), no action;
    # AwaitBrowser: the browser watch waits for the screen's Chromium to start again;
    # LookBefore, KeptFrame: the screen a step found, for its trace (engine/step_frames.py).
    own = {
        "Ping", "Ready", "Info", "Act", "EndBatch", "Frame", "FrameHash", "AwaitChange",
        "AwaitBrowser", "DefineApps", "LookBefore", "KeptFrame",
    }  # fmt: skip
    assert requests == own


def test_a_desktop_is_act_and_frames() -> None:
    members = {name for name in vars(Desktop) if not name.startswith("_")}
    assert members == {
        "act",
        "end_batch",
        "frame",
        "frame_hash",
        "look_before",
        "kept_frame",
        "await_change",
        "await_browser",
        "close",
    }


def test_the_engine_has_no_method_per_operation() -> None:
    tags = {str(cls.__struct_config__.tag) for cls in a.Action.__args__}
    operations = {
        "exec",
        "read_file",
        "write_file",
        "list_files",
        "grep",
        "glob",
        "cursor",
        "windows",
        "launch",
        "clipboard_get",
        "clipboard_set",
        "focus_window",
        "arrange_window",
        "close_window",
        "wait_window",
        "active_window",
    }
    methods = {name for name in vars(Engine) if not name.startswith("_")}
    assert not methods & (tags | operations), methods & (tags | operations)
