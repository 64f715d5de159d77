"""The contract every runtime keeps: the same actions, run on the in-memory double, a local
box and a docker box, answer the same result types and mean the same thing. The double
cannot drift from the real agent without one of these failing on one runtime."""

from __future__ import annotations

import asyncio
import base64
from typing import Literal

import pytest
from page_kit import page
from runtime_kit import Box

from holm.errors import BadRequest, Failed, NotFound, ScreenUnavailable
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.results import expect
from holm.wire.values import Point

# The box is the module's, so its tests share the module's event loop.
shared_box = pytest.mark.asyncio(loop_scope="module")

HERE = "/tmp/contract"


def _write(path: str, data: bytes) -> a.WriteFile:
    return a.WriteFile(what=a.WriteWhat(path=path, contents_base64=base64.b64encode(data).decode()))


# A page the page samples act on (a `data:` URL: no server, no outside address).
FORM = page(
    "<title>Sample</title><h1>Sample</h1><label for=n>Name</label><input id=n>"
    "<button>Continue</button>"
)

# One sample of every action the boxes do (each answers its `Result`).
SAMPLES: list[a.Action] = [
    a.Move(to=Point(x=20, y=30)),
    a.Click(at=Point(x=20, y=30)),
    a.DoubleClick(at=Point(x=21, y=31)),
    a.Drag(from_=Point(x=10, y=10), to=Point(x=30, y=30)),
    a.Path(through=[Point(x=10, y=10), Point(x=20, y=20), Point(x=30, y=10)]),
    a.MouseDown(at=Point(x=5, y=5), hold_ms=1000),
    a.MouseUp(at=Point(x=5, y=5)),
    a.Scroll(at=Point(x=50, y=50), dy=1),
    a.Scroll(at=Point(x=50, y=50), dy_px=50, held=["shift"]),
    a.Click(at=Point(x=22, y=32), count=3, held=["ctrl"]),
    a.DoubleClick(at=Point(x=23, y=33), held=["shift"]),
    a.Type(text="hi"),
    a.Press(chord=["shift"], then=["Escape"]),
    a.KeyDown(key="shift", hold_ms=1000),
    a.KeyUp(key="shift"),
    a.Wait(ms=1),
    a.WaitStill(settle_ms=0, within_ms=1000),
    a.Capture(),
    a.Cursor(),
    a.Windows(),
    a.Apps(),
    a.Clipboard(text="sample"),
    a.Record(what=a.RecordWhat(do="status")),
    a.OpenUrl(url="about:blank"),
    a.OpenUrl(url=FORM, label="sample"),
    a.Tabs(),
    a.OnPage(what=a.FillOp(query="Name", text="Ada"), tab="sample"),
    a.OnPage(what=a.WaitForOp(query="Continue")),
    a.Look(what=a.LookWhat(query="Continue")),
    a.Snapshot(),
    a.Read(),
    a.Evaluate(what=a.EvaluateWhat(expression="document.title")),
    a.PageShot(),
    a.PagePdf(what=a.PdfWhat(path=f"{HERE}/page.pdf")),
    a.Cookies(what=a.CookiesWhat(do="get")),
    a.Console(),
    a.OnNode(what=a.NodeFindOp(node=a.NodeQuery(role="frame"))),
    a.StateSave(),
    a.StateLoad(what=a.StateLoadWhat(session_json='{"cookies": [], "origins": []}')),
    a.Exec(what=a.ExecWhat(argv=["echo", "sample"])),
    _write(f"{HERE}/sample.txt", b"sample\n"),
    a.ReadFile(path=f"{HERE}/sample.txt"),
    a.ListFiles(path=HERE),
    a.Grep(what=a.GrepWhat(pattern="sample", path=HERE)),
    a.Glob(what=a.GlobWhat(pattern="*.txt", path=HERE)),
]
# Done on a window or a tab the box opened, in the tests below.
ON_SOMETHING = (a.AwaitWindow, a.OnWindow, a.Launch, a.OnTab, a.Dialog)


def test_the_samples_cover_every_built_action() -> None:
    built = {cls for cls in a.Action.__args__ if cls.Result is not r.NoResult}
    sampled = {type(action) for action in SAMPLES} | set(ON_SOMETHING)
    assert sampled == built


@shared_box
async def test_every_action_answers_its_result_type(box: Box) -> None:
    for action in SAMPLES:
        result = await box.desktop.act(0, action)
        assert isinstance(result, type(action).Result), (box.runtime, action, result)


@shared_box
async def test_the_pointer_is_where_it_was_moved(box: Box) -> None:
    moved = expect(await box.desktop.act(0, a.Move(to=Point(x=123, y=45))), r.Pointed)
    assert moved.at == Point(x=123, y=45)
    assert await box.desktop.act(0, a.Cursor()) == Point(x=123, y=45)
    clicked = expect(await box.desktop.act(0, a.Click()), r.Pointed)
    assert clicked.at == Point(x=123, y=45)
    # A scroll of nothing would do nothing: it is refused, not answered as done.
    with pytest.raises(BadRequest, match="scroll needs"):
        await box.desktop.act(0, a.Scroll(at=Point(x=5, y=5)))


@shared_box
async def test_files_written_are_read_listed_and_found(box: Box) -> None:
    data = b"first line\nsecond needle line\n"
    saved = expect(await box.desktop.act(0, _write(f"{HERE}/f/a.txt", data)), r.FileSaved)
    assert saved == r.FileSaved(path=f"{HERE}/f/a.txt", size=len(data))
    read = expect(await box.desktop.act(0, a.ReadFile(path=f"{HERE}/f/a.txt")), r.FileData)
    assert (read.size, base64.b64decode(read.contents_base64)) == (len(data), data)
    listed = expect(await box.desktop.act(0, a.ListFiles(path=f"{HERE}/f")), r.FileList)
    assert [(e.name, e.size, e.type) for e in listed.entries] == [("a.txt", len(data), "file")]
    grep = a.Grep(what=a.GrepWhat(pattern="needle", path=f"{HERE}/f"))
    found = expect(await box.desktop.act(0, grep), r.GrepResult)
    assert [(m.path, m.line) for m in found.matches] == [(f"{HERE}/f/a.txt", 2)]
    assert not found.cut
    glob = a.Glob(what=a.GlobWhat(pattern="*.txt", path=f"{HERE}/f"))
    paths = expect(await box.desktop.act(0, glob), r.GlobResult)
    assert paths.paths == [f"{HERE}/f/a.txt"] and not paths.cut


@shared_box
async def test_a_missing_file_is_not_found(box: Box) -> None:
    with pytest.raises(NotFound):
        await box.desktop.act(0, a.ReadFile(path=f"{HERE}/no/such/file"))


@shared_box
async def test_exec_answers_code_and_output(box: Box) -> None:
    ran = a.Exec(what=a.ExecWhat(argv=["echo", "hello", "box"]))
    result = expect(await box.desktop.act(0, ran), r.ExecResult)
    assert (result.code, result.stdout, result.timed_out) == (0, "hello box\n", False)
    failed = expect(await box.desktop.act(0, a.Exec(what=a.ExecWhat(argv=["false"]))), r.ExecResult)
    assert failed.code == 1 and not failed.succeeded


@shared_box
async def test_both_selections_keep_what_was_set(box: Box) -> None:
    for selection in ("clipboard", "primary"):
        text = f"ünïcode {selection}"
        put = await box.desktop.act(0, a.Clipboard(selection=selection, text=text))
        assert put == r.ClipboardView(selection=selection, length=len(text.encode()))
        got = expect(await box.desktop.act(0, a.Clipboard(selection=selection)), r.ClipboardView)
        assert (got.text, got.length) == (text, len(text.encode()))


@shared_box
async def test_a_recording_runs_until_stopped_and_its_file_stays(box: Box) -> None:
    def record(do: Literal["start", "stop", "status"]) -> a.Record:
        return a.Record(what=a.RecordWhat(do=do, fps=5))

    started = expect(await box.desktop.act(0, record("start")), r.Recording)
    assert started.recording and started.path is not None and started.path.endswith(".mp4")
    assert (started.fps, started.width, started.height) == (5, 1280, 800)
    assert await box.desktop.act(0, record("status")) == started
    with pytest.raises(Failed, match="recording already"):
        await box.desktop.act(0, record("start"))
    stopped = expect(await box.desktop.act(0, record("stop")), r.Recording)
    assert not stopped.recording and stopped.path == started.path
    assert stopped.stopped_at_ms is not None and started.started_at_ms is not None
    assert stopped.stopped_at_ms >= started.started_at_ms
    assert await box.desktop.act(0, record("status")) == stopped
    with pytest.raises(Failed, match="not recording"):
        await box.desktop.act(0, record("stop"))
    folder, name = started.path.rsplit("/", 1)
    listed = expect(await box.desktop.act(0, a.ListFiles(path=folder)), r.FileList)
    assert name in [entry.name for entry in listed.entries]


@shared_box
async def test_a_launched_window_is_listed_focused_arranged_and_closed(box: Box) -> None:
    launched = expect(await box.desktop.act(0, a.Launch(app="xterm")), r.FoundWindow).window
    listed = expect(await box.desktop.act(0, a.Windows()), r.WindowList)
    assert launched.id in [w.id for w in listed.windows]
    query = a.WindowQuery(class_=launched.class_, within_ms=5000)
    waited = expect(await box.desktop.act(0, a.AwaitWindow(what=query)), r.FoundWindow)
    assert waited.window.class_ == launched.class_

    focus = a.OnWindow(window=launched.id, what=a.WindowOp(do="focus"))
    assert await box.desktop.act(0, focus) == r.WindowChanged(id=launched.id)
    active = expect(await box.desktop.act(0, a.Windows(active=True)), r.WindowList)
    assert [w.id for w in active.windows] == [launched.id]

    how = a.Arrange(how="at", to=Point(x=40, y=50))
    first = expect(await box.desktop.act(0, _arrange(launched.id, how)), r.WindowChanged)
    how = a.Arrange(how="at", to=Point(x=140, y=250))
    again = expect(await box.desktop.act(0, _arrange(launched.id, how)), r.WindowChanged)
    assert first.window is not None and again.window is not None
    # Where the frame puts the window's own corner is the window manager's business; the
    # distance between two moves is not.
    assert (again.window.x - first.window.x, again.window.y - first.window.y) == (100, 200)

    close = a.OnWindow(window=launched.id, what=a.WindowOp(do="close"))
    closed = await box.desktop.act(0, close)
    assert closed == r.WindowChanged(id=launched.id, closed=True)
    await _until_gone(box, launched.id)


def _arrange(window: str, how: a.Arrange) -> a.OnWindow:
    return a.OnWindow(window=window, what=a.WindowOp(do="arrange", how=how))


async def _until_gone(box: Box, window: str) -> None:
    # A close asks the application to go (WM_DELETE_WINDOW); it goes in its own time.
    for _ in range(200):
        listed = expect(await box.desktop.act(0, a.Windows()), r.WindowList)
        if window not in [w.id for w in listed.windows]:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"window {window} is still listed on {box.runtime}")


@shared_box
async def test_a_page_opened_is_a_tab(box: Box) -> None:
    opened = expect(
        await box.desktop.act(0, a.OpenUrl(url="data:text/html,<title>Contract</title>")),
        r.PageOpened,
    )
    tabs = expect(await box.desktop.act(0, a.Tabs()), r.TabList)
    assert opened.tab in [t.tab for t in tabs.tabs]
    focused = expect(await box.desktop.act(0, a.OnTab(tab=opened.tab)), r.TabDone)
    assert focused == r.TabDone(tab=opened.tab)
    # A listing is of its moment: the tab going elsewhere later does not change it.
    await box.desktop.act(0, a.OpenUrl(url="data:text/html,<title>Later</title>"))
    assert [t.title for t in tabs.tabs if t.tab == opened.tab] == ["Contract"]


@shared_box
async def test_a_capture_is_a_png_of_the_screen(box: Box) -> None:
    shot = expect(await box.desktop.act(0, a.Capture()), r.Captured)
    assert shot.png_base64 is not None and not shot.unchanged
    assert base64.b64decode(shot.png_base64).startswith(b"\x89PNG")
    frame = await box.desktop.frame(0, have=None)
    assert frame.hash.startswith("px:")
    still = await box.desktop.frame(0, have=frame.hash)
    # A live screen may change between two looks; a still one answers unchanged.
    assert still.unchanged or still.hash != frame.hash


@shared_box
async def test_held_keys_and_buttons_are_released_by_the_batch_end(box: Box) -> None:
    await box.desktop.act(0, a.KeyDown(key="shift"))
    await box.desktop.act(0, a.MouseDown(at=Point(x=5, y=5), button="middle"))
    ended = await box.desktop.end_batch(0)
    released, held = ended.released, ended.held
    assert (released.keys, released.buttons) == (["shift"], ["middle"])
    assert (held.keys, held.buttons) == ([], [])


@shared_box
async def test_a_screen_the_box_lacks_is_unavailable_everywhere(box: Box) -> None:
    for action in (a.Cursor(), a.Windows(), a.Type(text="x")):
        with pytest.raises(ScreenUnavailable, match="no screen 7"):
            await box.desktop.act(7, action)
    with pytest.raises(ScreenUnavailable, match="no screen 7"):
        await box.desktop.frame(7)


@shared_box
async def test_page_elements_are_found_by_meaning_everywhere(box: Box) -> None:
    opened = expect(await box.desktop.act(0, a.OpenUrl(url=FORM, label="form")), r.PageOpened)
    assert (opened.title, opened.label) == ("Sample", "form")
    filled = a.OnPage(what=a.FillOp(query="Name", text="Ada"), tab="form")
    done = expect(await box.desktop.act(0, filled), r.ElementDone)
    assert done.element is not None and done.element.value == "Ada"
    assert [c.value for c in done.changed] == ["Ada"]
    waited = expect(
        await box.desktop.act(0, a.OnPage(what=a.WaitForOp(query="Sample"))), r.ElementDone
    )
    assert waited.matched == "Sample"
    title = a.Evaluate(what=a.EvaluateWhat(expression="document.title"), tab="form")
    assert expect(await box.desktop.act(0, title), r.Evaluated).value == "Sample"
    with pytest.raises(NotFound, match="Nowhere"):
        await box.desktop.act(0, a.OnPage(what=a.ClickOp(query="Nowhere")))
    with pytest.raises(NotFound, match="no dialog"):
        await box.desktop.act(0, a.Dialog())
    with pytest.raises(NotFound, match="no tab"):
        await box.desktop.act(0, a.Read(what=a.ReadWhat(tab="no-such-tab")))


@shared_box
async def test_cookies_are_set_listed_and_cleared_everywhere(box: Box) -> None:
    url = "http://cookies.test/"
    jar = [a.CookieIn(name="session", value="s3cret", http_only=True)]
    put = a.Cookies(what=a.CookiesWhat(do="set", url=url, cookies=jar))
    assert expect(await box.desktop.act(0, put), r.CookieList).changed == 1
    got = a.Cookies(what=a.CookiesWhat(do="get", url=url))
    listed = expect(await box.desktop.act(0, got), r.CookieList).cookies
    assert [(c.name, c.value, c.domain, c.http_only) for c in listed] == [
        ("session", "s3cret", "cookies.test", True)
    ]
    clear = a.Cookies(what=a.CookiesWhat(do="clear", url=url))
    assert expect(await box.desktop.act(0, clear), r.CookieList).changed == 1
    assert expect(await box.desktop.act(0, got), r.CookieList).cookies == []
