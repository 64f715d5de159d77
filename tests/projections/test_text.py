"""The trace's text: the spec's form line for line, the short forms of failures, commands,
files, removals and forks, and (hypothesis) that any entry at all renders as one line."""

from __future__ import annotations

from hypothesis import given
from projection_kit import TraceBuilder, any_entry

from holm.projections import INCOMPLETE_LINE, entry_line, entry_text, render_lines
from holm.projections.text import pruned_line
from holm.wire.actions import OpenUrl, Type
from holm.wire.entries import (
    Adopted,
    BoxGone,
    BoxPaused,
    Entry,
    FileWritten,
    ForkedFrom,
    TakeoverEnded,
    TakeoverStarted,
)
from holm.wire.spec import DesktopSpec, Spec


def test_the_example_of_the_spec(trace: TraceBuilder) -> None:
    trace.created()
    trace.acted(OpenUrl(url="https://example.com"))
    trace.frame()
    trace.add(TakeoverStarted, screen=0)
    trace.frame(actor="person")
    trace.add(TakeoverEnded, screen=0)
    trace.executed(["ls", "/tmp"], 0)
    assert list(render_lines(trace.entries)) == [
        "   0  agent    created 1280x800",
        # The spec shows `open_url` alone; holm adds the URL as a hint (docs/trace.md).
        "   1  agent    screen 0  open_url https://example.com",
        "   2  agent    screen 0  the screen changed",
        "   3  agent    screen 0 handed to a person",
        "   4  person   screen 0  the screen changed",
        "   5  agent    screen 0 taken back",
        "   6  agent    ran ls /tmp → 0",
    ]


def test_failed_step_says_why(trace: TraceBuilder) -> None:
    trace.created()
    step = trace.acted(ok=False)
    assert entry_text(step) == "screen 0  click 1,2 failed: it did not work"


def test_commands_show_how_they_ended(trace: TraceBuilder) -> None:
    trace.created()
    assert entry_text(trace.executed(["sleep", "99"], None, timed_out=True)) == (
        "ran sleep 99 → timed out"
    )
    assert entry_text(trace.executed(["sh", "-c", "exit 3"], 3)) == 'ran sh -c "exit 3" → 3'


def test_file_removal_fork_and_adoption(trace: TraceBuilder) -> None:
    trace.created(Spec(desktop=DesktopSpec(width=800, height=600, screens=2)))
    assert entry_text(trace.entries[0]) == "created 800x600, 2 screens"
    assert entry_text(trace.add(FileWritten, path="/tmp/a.txt", bytes=12)) == (
        "wrote /tmp/a.txt (12 bytes)"
    )
    assert entry_text(trace.add(FileWritten, path="/tmp/b", bytes=1)) == "wrote /tmp/b (1 byte)"
    assert entry_text(trace.add(ForkedFrom, source="box_src", up_to=40)) == (
        "forked from box_src up to 40"
    )
    assert entry_text(trace.add(ForkedFrom, source="box_src")) == "forked from box_src"
    assert entry_text(trace.add(BoxGone, reason="expired")) == "removed: expired"
    adopted = trace.add(Adopted, actor="system", box_id="b", runtime="local")
    assert entry_line(adopted) == f"{adopted.seq:>4}  system   adopted"


def test_typed_text_stays_on_one_line_and_is_clipped(trace: TraceBuilder) -> None:
    trace.created()
    typed = trace.acted(Type(text="line one\nline two"))
    assert entry_text(typed) == 'screen 0  type "line one\\nline two"'
    long = entry_text(trace.acted(Type(text="x" * 500)))
    assert long == 'screen 0  type "' + "x" * 59 + '…"'


def test_an_incomplete_trace_ends_with_a_line_that_says_so(trace: TraceBuilder) -> None:
    trace.created()
    lines = list(render_lines(trace.entries, incomplete=True))
    assert lines == ["   0  agent    created 1280x800", INCOMPLETE_LINE]
    assert INCOMPLETE_LINE.startswith("incomplete")


@given(any_entry)
def test_any_entry_renders_as_one_line(entry: Entry) -> None:
    line = entry_line(entry)
    assert line.startswith(f"{entry.seq:>4}  {entry.actor:<8} ")
    assert "\n" not in line and "\r" not in line
    assert len(line) < 400


def test_a_trace_whose_front_was_pruned_says_where_it_begins(trace: TraceBuilder) -> None:
    trace.created()
    trace.add(BoxPaused)
    trace.add(BoxPaused)
    lines = list(render_lines(trace.entries[2:]))
    assert lines[0] == pruned_line(2)
    assert lines[0].startswith("pruned: the trace begins at seq 2")
    assert lines[1:] == [entry_line(trace.entries[2])]
    assert not any(line.startswith("pruned") for line in render_lines(trace.entries))


def test_a_trace_pruned_by_age_says_where_it_begins_and_that_some_was_kept(
    trace: TraceBuilder,
) -> None:
    trace.created()
    for _ in range(4):
        trace.add(BoxPaused)
    kept = [trace.entries[0], *trace.entries[3:]]

    lines = list(render_lines(kept, first_seq=3))

    assert lines[0] == pruned_line(3, kept_before=True)
    assert lines[0] == (
        "pruned: the trace begins at seq 3; of the 3 entries before it, only those its box's"
        " state is folded from were kept"
    )
    assert lines[1:] == [entry_line(entry) for entry in kept]
