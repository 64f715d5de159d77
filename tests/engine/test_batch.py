"""A batch of actions: one `acted` entry per step that ran (batch id, index, key, ok and
the error of a failed step), `app_launched` beside a `launch` step, the answer's fields,
and one batch at a time per screen."""

from __future__ import annotations

import asyncio
import base64

import msgspec
import pytest
from engine_kit import fields, kinds, run, trace_of

from holm.adapters.memory.runtime import MemoryWorld
from holm.engine import Engine, batch
from holm.errors import BadRequest, Denied, NotFound
from holm.replay.plan import plan_fork
from holm.wire.actions import (
    Action,
    Click,
    Clipboard,
    Cursor,
    Exec,
    ExecWhat,
    KeyDown,
    KeyUp,
    Launch,
    MouseDown,
    Press,
    ReadFile,
    Type,
    Wait,
    WriteFile,
    WriteWhat,
)
from holm.wire.api import ActionsRequest
from holm.wire.entries import (
    Acted,
    AppLaunched,
    Entry,
    Executed,
    FrameSeen,
    acted_key,
    step_key,
)
from holm.wire.results import ClipboardView, FileData, FoundWindow, expect
from holm.wire.spec import DesktopSpec, Placement, Spec
from holm.wire.values import Point


def steps(entries: list[Entry]) -> list[Acted | AppLaunched]:
    return [e for e in entries if isinstance(e, Acted | AppLaunched)]


def acted_of(entries: list[Entry]) -> list[Acted]:
    return [e for e in entries if isinstance(e, Acted)]


async def test_each_step_is_its_own_acted_entry(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    actions: list[Action] = [
        Click(at=Point(x=10, y=20)),
        Type(text="hello"),
        Cursor(),
        Exec(what=ExecWhat(argv=["echo", "hi"])),
    ]
    result = await engine.run_batch(box.id, 0, ActionsRequest(actions=actions, want=["cursor"]))
    assert [r.type for r in result.results] == ["click", "type", "cursor", "exec"]
    assert all(r.ok for r in result.results) and result.stopped_at is None
    assert result.results[2].value == Point(x=10, y=20)
    assert result.cursor == Point(x=10, y=20)
    assert result.windows and result.windows[0].class_ == "chromium"
    acted = acted_of(await trace_of(engine, box.id))
    assert [a.index for a in acted] == [0, 1, 2, 3]
    assert len({a.batch for a in acted}) == 1 and str(acted[0].batch).startswith("bat_")
    for a, action in zip(acted, actions, strict=True):
        assert (a.actor, a.screen, a.ok, a.action) == ("agent", 0, True, action)
        assert a.key == step_key("acted", {"screen": 0, "action": action})
    # An exec step keeps what a strict replay compares.
    assert acted[3].result["stdout"] == "hi\n" and acted[0].result is None


async def test_a_refused_step_stops_the_batch_unless_keep_going(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    actions: list[Action] = [
        Click(at=Point(x=1, y=1)),
        ReadFile(path="/nope"),
        Click(at=Point(x=2, y=2)),
    ]
    stopped = await engine.run_batch(box.id, 0, ActionsRequest(actions=actions))
    assert stopped.stopped_at == 1
    assert [r.ok for r in stopped.results] == [True, False]
    assert stopped.results[1].error is not None and stopped.results[1].error.code == "not_found"
    went_on = await engine.run_batch(box.id, 0, ActionsRequest(actions=actions, keep_going=True))
    assert went_on.stopped_at is None
    assert [r.ok for r in went_on.results] == [True, False, True]
    acted = acted_of(await trace_of(engine, box.id))
    assert [(a.index, a.ok) for a in acted] == [
        (0, True),
        (1, False),
        (0, True),
        (1, False),
        (2, True),
    ]
    failed = acted[1]
    assert failed.error is not None and failed.error.code == "not_found"
    assert "/nope" in failed.error.message


async def test_a_launch_step_also_records_app_launched_with_its_batch(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    result = await engine.run_batch(
        box.id, 0, ActionsRequest(actions=[Launch(app="xterm", args=["-e", "true"])])
    )
    window = expect(result.results[0].value, FoundWindow).window
    recorded = steps(await trace_of(engine, box.id))
    assert [type(e).__name__ for e in recorded] == ["Acted", "AppLaunched"]
    acted, launched = recorded
    assert isinstance(launched, AppLaunched) and launched.batch == acted.batch
    assert (launched.app, launched.args, launched.window) == ("xterm", ["-e", "true"], window.id)
    assert launched.key == step_key(
        "app_launched", {"screen": 0, "app": "xterm", "args": ["-e", "true"]}
    )
    # Outside a batch, a launch is recorded alone (a fork does it again from that entry).
    await engine.act(box.id, 0, Launch(app="mousepad"))
    alone = steps(await trace_of(engine, box.id))[-1]
    assert isinstance(alone, AppLaunched) and alone.batch is None and alone.app == "mousepad"


async def test_buttons_left_down_are_released_at_the_end(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    result = await engine.run_batch(
        box.id, 0, ActionsRequest(actions=[MouseDown(at=Point(x=5, y=5), button="right")])
    )
    assert result.released == ["right"]
    assert result.holding == []


async def test_a_step_whose_entry_cannot_be_made_still_ends_the_batch(
    engine: Engine, world: MemoryWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = await engine.create_box(Spec(), Placement())

    def no_key_for_clicks(screen: int, action: Action) -> str:
        if isinstance(action, Click):
            raise RuntimeError("no key")
        return acted_key(screen, action)

    monkeypatch.setattr(batch, "acted_key", no_key_for_clicks)
    pressed = MouseDown(at=Point(x=5, y=5), button="right")
    request = ActionsRequest(actions=[pressed, Click(at=Point(x=9, y=9))])
    with pytest.raises(RuntimeError, match="no key"):
        await engine.run_batch(box.id, 0, request)
    # As the error comes out, nothing the batch pressed is still down, and the step
    # before is in the trace.
    assert world.boxes[box.id].screens[0].buttons == set()
    acted = [a.action for a in acted_of(await trace_of(engine, box.id))]
    assert acted == [pressed]


async def test_want_frame_with_have_frame_gives_unchanged(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    first = await engine.run_batch(box.id, 0, ActionsRequest(actions=[], want=["frame"]))
    assert first.frame is not None and first.frame.png_base64 is not None
    assert base64.b64decode(first.frame.png_base64).startswith(b"\x89PNG")
    again = await engine.run_batch(
        box.id, 0, ActionsRequest(actions=[], want=["frame"], have_frame=first.frame.hash)
    )
    assert again.frame is not None and again.frame.unchanged and again.frame.png_base64 is None


async def test_one_batch_at_a_time_per_screen(engine: Engine) -> None:
    box = await engine.create_box(Spec(desktop=DesktopSpec(screens=2)), Placement())
    slow = ActionsRequest(actions=[Wait(ms=30), Cursor(), Wait(ms=30), Cursor()])
    await asyncio.gather(
        engine.run_batch(box.id, 0, slow),
        engine.run_batch(box.id, 0, slow),
        engine.run_batch(box.id, 1, slow),
    )
    acted = [e for e in acted_of(await trace_of(engine, box.id)) if e.screen == 0]
    # The two batches of screen 0 do not interleave: each one's four steps are together.
    batches = [a.batch for a in acted]
    assert batches[:4] == [batches[0]] * 4 and batches[4:] == [batches[4]] * 4
    assert batches[0] != batches[4]


async def test_a_screen_a_person_has_refuses_the_agent(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    await engine.take_over(box.id, 0)
    with pytest.raises(Denied, match="a person has screen 0"):
        await engine.run_batch(box.id, 0, ActionsRequest(actions=[Cursor()]))
    with pytest.raises(Denied):
        await engine.act(box.id, 0, Clipboard(text="x"))
    # Reading the screen is still allowed.
    assert (await engine.frame(box.id, 0)).hash.startswith("px:")


async def test_a_screen_that_does_not_exist(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    with pytest.raises(NotFound, match="no screen 1"):
        await engine.run_batch(box.id, 1, ActionsRequest(actions=[Cursor()]))


async def test_exec_files_and_clipboard_record_sizes_not_content(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    result = await run(engine, box.id, "echo", "hi", timeout_ms=5000)
    assert (result.code, result.stdout) == (0, "hi\n")
    timed_out = await run(engine, box.id, "sleep", "1", timeout_ms=10)
    assert timed_out.timed_out and timed_out.code is None
    secret = base64.b64encode(b"s3cret!").decode()
    await engine.act(
        box.id, 0, WriteFile(what=WriteWhat(path="/tmp/secret.txt", contents_base64=secret))
    )
    read = expect(await engine.act(box.id, 0, ReadFile(path="/tmp/secret.txt")), FileData)
    assert base64.b64decode(read.contents_base64) == b"s3cret!"
    await engine.act(box.id, 0, Clipboard(selection="primary", text="pässword"))
    got = expect(await engine.act(box.id, 0, Clipboard(selection="primary")), ClipboardView)
    assert got.text == "pässword"
    entries = [e for e in await trace_of(engine, box.id) if not isinstance(e, FrameSeen)][2:]
    assert kinds(entries) == [
        "executed",
        "executed",
        "file_written",
        "file_read",
        "clipboard_set",
        "clipboard_read",
    ]
    executed = entries[0]
    assert isinstance(executed, Executed)
    assert (executed.argv, executed.code, executed.stdout, executed.timed_out) == (
        ["echo", "hi"],
        0,
        "hi\n",
        False,
    )
    assert executed.key == step_key("executed", {"argv": ["echo", "hi"], "timeout_ms": 5000})
    assert fields(entries[1], "timed_out", "code") == {"timed_out": True, "code": None}
    for file_entry in entries[2:4]:
        assert fields(file_entry, "path", "bytes") == {"path": "/tmp/secret.txt", "bytes": 7}
    for clip in entries[4:6]:
        assert fields(clip, "selection", "bytes", "screen") == {
            "selection": "primary",
            "bytes": 9,
            "screen": 0,
        }
    written = b"".join(msgspec.json.encode(e) for e in await trace_of(engine, box.id))
    assert b"s3cret" not in written and "pässword".encode() not in written


async def test_a_batch_write_or_clipboard_step_keeps_its_size_not_its_bytes(
    engine: Engine,
) -> None:
    """A batch's `write_file` and clipboard set are recorded as `PUT …/files` and
    `PUT …/clipboard` are: the path and size, or the selection and length; a fork skips
    them with the same reason."""
    box = await engine.create_box(Spec(), Placement())
    secret = base64.b64encode(b"s3cret!").decode()
    actions: list[Action] = [
        WriteFile(what=WriteWhat(path="/tmp/secret.txt", contents_base64=secret)),
        Clipboard(selection="primary", text="pässword"),
        Clipboard(selection="primary"),
    ]
    result = await engine.run_batch(box.id, 0, ActionsRequest(actions=actions))
    assert all(r.ok for r in result.results)
    # The box did get the bytes.
    read = expect(await engine.act(box.id, 0, ReadFile(path="/tmp/secret.txt")), FileData)
    assert base64.b64decode(read.contents_base64) == b"s3cret!"
    trace = await trace_of(engine, box.id)
    written = b"".join(msgspec.json.encode(e) for e in trace)
    assert b"s3cret" not in written and secret.encode() not in written
    assert "pässword".encode() not in written and b"p\\u00e4ssword" not in written
    acted = acted_of(trace)
    assert [(a.action, a.bytes) for a in acted] == [
        (WriteFile(what=WriteWhat(path="/tmp/secret.txt", contents_base64="")), 7),
        (Clipboard(selection="primary", text=""), 9),
        (Clipboard(selection="primary"), None),
    ]
    plan = plan_fork(trace)
    assert [s.seq for s in plan.skipped] == [acted[0].seq, acted[1].seq]
    assert [s.why for s in plan.skipped] == [
        "the trace records that /tmp/secret.txt was written, not what went into it",
        "the trace records that the primary selection of screen 0 was set, not its text",
    ]
    assert [s.seq for s in plan.steps] == [acted[2].seq]


async def test_key_names_are_normalized_before_they_are_recorded(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    body = (
        b'{"actions": [{"type": "press", "chord": "CTRL+l", "then": "shift+Tab RETURN f5"},'
        b' {"type": "press", "chord": ["Ctrl", "Shift+t"], "then": ["a", "A"]},'
        b' {"type": "key_down", "key": ["SHIFT", "ctrl"]},'
        b' {"type": "key_up", "key": "shift+CTRL"}]}'
    )
    request = msgspec.json.decode(body, type=ActionsRequest)
    result = await engine.run_batch(box.id, 0, request)
    assert all(r.ok for r in result.results)
    assert [a.action for a in acted_of(await trace_of(engine, box.id))] == [
        Press(chord=["ctrl", "l"], then=["shift+tab", "return", "F5"]),
        Press(chord=["ctrl", "shift", "t"], then=["a", "A"]),
        KeyDown(key="shift+ctrl"),
        KeyUp(key="shift+ctrl"),
    ]


async def test_an_unknown_key_name_is_refused_with_the_nearest_names(engine: Engine) -> None:
    box = await engine.create_box(Spec(), Placement())
    before = await trace_of(engine, box.id)
    request = ActionsRequest(actions=[Click(at=Point(x=1, y=1)), Press(chord="ctrl+Retrun")])
    with pytest.raises(BadRequest, match="'Retrun'") as refused:
        await engine.run_batch(box.id, 0, request)
    assert "nearest known: return" in refused.value.message
    with pytest.raises(BadRequest, match=r"'shfit'.*shift"):
        await engine.act(box.id, 0, KeyDown(key="shfit"))
    # Nothing ran, nothing was recorded.
    assert [e for e in await trace_of(engine, box.id) if not isinstance(e, FrameSeen)] == [
        e for e in before if not isinstance(e, FrameSeen)
    ]
