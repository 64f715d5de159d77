"""The rules of native widgets that need no bus: which label names a field, which roles a
query's role means, how well a name answers a query, what a path says, which display a
process's `DISPLAY` names; and the local
runtime's refusal of the feature on a host without its packages."""

from __future__ import annotations

import subprocess
import time

import msgspec
import pytest

from holm.agent.widgets.app_screens import (
    DisplayWindows,
    WhereShown,
    environ_display,
    same_display,
)
from holm.agent.widgets.atspi import nearest_label, role_matches, split_path, text_rank
from holm.errors import BadRequest
from holm.wire import actions as a
from holm.wire.values import Region

FIELD = Region(100, 50, 160, 30)


def test_the_label_on_the_fields_row_and_left_of_it_names_it() -> None:
    labels = [
        ("Street", Region(40, 90, 50, 30)),
        ("Name", Region(40, 50, 50, 30)),
        ("Far", Region(0, 50, 30, 30)),
        ("Title", Region(100, 10, 80, 20)),
    ]
    assert nearest_label(FIELD, labels) == "Name"


def test_without_one_on_its_row_the_nearest_label_above_it_names_it() -> None:
    labels = [
        ("Heading", Region(100, 0, 80, 20)),
        ("Name", Region(110, 25, 60, 20)),
        ("Aside", Region(400, 25, 60, 20)),
    ]
    assert nearest_label(FIELD, labels) == "Name"
    assert nearest_label(FIELD, [("Below", Region(100, 90, 60, 20))]) == ""


def test_a_role_means_the_roles_each_toolkit_names_it() -> None:
    assert role_matches("text", "entry") and role_matches("text", "text")
    assert role_matches("button", "push button") and role_matches("push_button", "push button")
    assert role_matches(None, "anything")
    assert not role_matches("text", "label") and not role_matches("button", "check box")


def test_names_that_equal_the_query_come_before_those_that_start_or_hold_it() -> None:
    assert text_rank("name", " Name ") == 0
    assert text_rank("Name", "Name of the street") == 1
    assert text_rank("street", "Name of the street") == 2
    assert text_rank("Name", "Street") is None and text_rank("Name", "") is None


def test_a_path_is_an_application_and_child_indices() -> None:
    assert split_path("zenity/0/2/1") == ("zenity", [0, 2, 1])
    assert split_path("Chromium#2") == ("Chromium#2", [])
    for bad in ("zenity/x", "/0/1", "zenity/-1"):
        with pytest.raises(BadRequest):
            split_path(bad)


def test_a_node_operation_decodes_by_its_op_and_refuses_unknown_fields() -> None:
    body = b'{"type":"on_node","what":{"op":"set","node":{"query":"Name"},"value":"Ada"}}'
    action = msgspec.json.decode(body, type=a.Action)
    assert action == a.OnNode(what=a.NodeSetOp(node=a.NodeQuery(query="Name"), value="Ada"))
    assert not a.reads_only(action)
    assert a.reads_only(a.OnNode(what=a.NodeTreeOp()))
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"op":"tree","depth":0}', type=a.NodeOp)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"op":"find","node":{"name":"x"}}', type=a.NodeOp)


def test_a_display_variable_names_its_display_however_it_is_written() -> None:
    assert same_display(":5", ":5") and same_display(":5.0", ":5")
    assert same_display("unix:5", ":5")
    assert not same_display(":50", ":5") and not same_display(":5", ":50")
    assert not same_display("otherhost:5", ":5") and not same_display("", ":5")


class Windows(DisplayWindows):
    """Displays whose windows are those given, with no X server."""

    def __init__(self, pids: dict[str, set[int]]) -> None:
        super().__init__()
        self.given = pids

    def pids(self, display: str) -> set[int]:
        return self.given[display]


def test_a_process_that_names_no_display_shows_where_its_windows_are() -> None:
    # Pids no process has: their environment cannot be read, as Chromium's tells nothing.
    shown = WhereShown([":1", ":2"], Windows({":1": {1 << 30}, ":2": {(1 << 30) + 1}}))
    assert shown.on(1 << 30, ":1") and not shown.on(1 << 30, ":2")
    assert shown.on((1 << 30) + 1, ":2") and not shown.on((1 << 30) + 1, ":1")
    # Nothing tells of an unknown process: it is on every screen.
    assert shown.on(None, ":1") and shown.on((1 << 30) + 2, ":2")


def test_a_process_shows_on_the_display_its_environment_names() -> None:
    with subprocess.Popen(["sleep", "30"], env={"DISPLAY": ":7.0"}) as started:
        try:
            # Popen returns while the kernel may still be setting up the new program's
            # environment (a vfork parent is let go before it is in place), which reads
            # empty meanwhile: the test is of a process already running.
            for _ in range(500):
                if environ_display(started.pid) is not None:
                    break
                time.sleep(0.01)
            # Its environment tells, so the displays' windows are not even read.
            shown = WhereShown([":7", ":8"], Windows({}))
            assert shown.on(started.pid, ":7") and not shown.on(started.pid, ":8")
        finally:
            started.kill()
