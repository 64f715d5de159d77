"""What a box object can do (`holm.Box`, `holm.AsyncBox`, `holm.Computer`), written once
over a small `Driver`: the thing that does the actions, whether holmd over REST
(holm/box.py) or a local box in this process (holm/computer.py).

`BoxMethods`, `PageMethods` and `FileMethods` are the methods, as coroutines; `AsyncBox`
has them as they are. `Box` and `Computer` have the same ones as plain calls: each is a
`Blocking` of the coroutine, which their drivers let run to its end without an event loop
(their calls block instead of waiting), as `SyncHolmClient` does (holm/client.py).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Concatenate, Generic, Literal, ParamSpec, Protocol, TypeVar

import msgspec

from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.api import TracePage
from holm.wire.values import Button, Modifier, Point

P = ParamSpec("P")
T = TypeVar("T")
Owner = TypeVar("Owner")


class Driver(Protocol):
    """What does a box's actions. `steps` runs actions in order on a screen, as one batch,
    and answers each one's result (the action's `Result` type); the first that fails
    raises its error. The rest are one thing each."""

    @property
    def box_id(self) -> str: ...

    async def steps(self, actions: Sequence[a.Action], screen: int) -> list[Any]: ...

    async def screenshot(self, screen: int) -> bytes: ...

    async def exec(self, what: a.ExecWhat) -> r.ExecResult: ...

    async def read_file(self, path: str) -> bytes: ...

    async def write_file(self, path: str, contents: bytes) -> r.FileSaved: ...

    async def list_files(self, path: str) -> r.FileList: ...

    async def trace(self) -> TracePage: ...

    async def remove(self) -> None: ...


def result_of(action: a.Action, value: Any) -> Any:
    """A step's value (JSON, as a batch answers it) as its action's `Result` type."""
    kind = getattr(type(action), "Result", None)
    return value if kind is None or isinstance(value, kind) else msgspec.convert(value, kind)


class PageMethods:
    """The page in the box's browser (the first screen's Chromium): elements named as a
    person would name them (their text, label, placeholder, `role name` or a selector).
    Each is a batch step, so a fork does it again."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    async def _one(self, action: a.Action) -> Any:
        (value,) = await self._driver.steps([action], 0)
        return value

    async def click(
        self, query: str, *, exact: bool = False, tab: str | None = None
    ) -> r.ElementDone:
        what = a.ClickOp(query=query, exact=exact)
        done: r.ElementDone = await self._one(a.OnPage(what=what, tab=tab))
        return done

    async def fill(
        self, query: str, text: str, *, exact: bool = False, tab: str | None = None
    ) -> r.ElementDone:
        what = a.FillOp(query=query, text=text, exact=exact)
        done: r.ElementDone = await self._one(a.OnPage(what=what, tab=tab))
        return done

    async def choose(
        self, query: str, options: Sequence[str], *, tab: str | None = None
    ) -> r.ElementDone:
        what = a.ChooseOp(query=query, options=list(options))
        done: r.ElementDone = await self._one(a.OnPage(what=what, tab=tab))
        return done

    async def read(
        self, *, format: Literal["markdown", "text", "raw"] = "markdown", tab: str | None = None
    ) -> str:
        """The page as markdown (or `text`, or `raw` HTML)."""
        page: r.PageText = await self._one(a.Read(what=a.ReadWhat(format=format, tab=tab)))
        return page.text

    async def find(self, query: str, *, tab: str | None = None) -> list[r.Element]:
        found: r.Found = await self._one(a.Look(what=a.LookWhat(query=query, tab=tab)))
        return found.elements

    async def evaluate(self, expression: str, *, tab: str | None = None) -> Any:
        """A JavaScript expression's value, as JSON (a promise is awaited)."""
        what = a.EvaluateWhat(expression=expression)
        done: r.Evaluated = await self._one(a.Evaluate(what=what, tab=tab))
        return done.value


class FileMethods:
    """The box's files: its disk, not this machine's."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    async def read(self, path: str) -> bytes:
        return await self._driver.read_file(path)

    async def read_text(self, path: str) -> str:
        return (await self._driver.read_file(path)).decode()

    async def write(self, path: str, contents: bytes | str) -> r.FileSaved:
        data = contents.encode() if isinstance(contents, str) else contents
        return await self._driver.write_file(path, data)

    async def list(self, path: str) -> list[r.FileInfo]:
        return (await self._driver.list_files(path)).entries


class BoxMethods:
    """A box's actions, in pixels of its screen (`screen`, 0 by default): each runs as a
    batch of one step unless given to `act` together."""

    def __init__(self, driver: Driver, screen: int = 0) -> None:
        self._driver = driver
        self.screen = screen
        self.page = PageMethods(driver)
        self.files = FileMethods(driver)

    @property
    def id(self) -> str:
        return self._driver.box_id

    async def act(self, *actions: a.Action) -> list[Any]:
        """Several actions in order, holding the screen for all of them; each one's
        result."""
        return await self._driver.steps(actions, self.screen)

    async def _one(self, action: a.Action) -> Any:
        (value,) = await self._driver.steps([action], self.screen)
        return value

    async def open(self, url: str, *, new_tab: bool = False) -> r.PageOpened:
        """Open `url` in the box's browser (in a new tab with `new_tab`)."""
        action = a.OpenUrl(url=url, target="blank" if new_tab else "current")
        opened: r.PageOpened = await self._one(action)
        return opened

    async def click(
        self,
        x: int,
        y: int,
        *,
        button: Button = "left",
        held: Sequence[Modifier] = (),
    ) -> r.Pointed:
        action = a.Click(at=Point(x=x, y=y), button=button, held=list(held))
        pointed: r.Pointed = await self._one(action)
        return pointed

    async def double_click(self, x: int, y: int, *, button: Button = "left") -> r.Pointed:
        pointed: r.Pointed = await self._one(a.DoubleClick(at=Point(x=x, y=y), button=button))
        return pointed

    async def move(self, x: int, y: int) -> r.Pointed:
        pointed: r.Pointed = await self._one(a.Move(to=Point(x=x, y=y)))
        return pointed

    async def drag(self, start: tuple[int, int], end: tuple[int, int]) -> r.Pointed:
        action = a.Drag(from_=Point(x=start[0], y=start[1]), to=Point(x=end[0], y=end[1]))
        pointed: r.Pointed = await self._one(action)
        return pointed

    async def scroll(self, x: int, y: int, *, dy: int = 0, dx: int = 0) -> r.Pointed:
        """Scroll by wheel notches at (x, y): `dy` > 0 down, `dx` > 0 right."""
        pointed: r.Pointed = await self._one(a.Scroll(at=Point(x=x, y=y), dx=dx, dy=dy))
        return pointed

    async def type(self, text: str) -> r.Typed:
        """Type `text` into whatever has the keyboard focus."""
        typed: r.Typed = await self._one(a.Type(text=text))
        return typed

    async def press(self, *keys: str) -> r.Pressed:
        """Press keys together: `press("ctrl", "l")`, or `press("ctrl+l")`, `press("enter")`."""
        chord = [key for given in keys for key in given.split("+")]
        pressed: r.Pressed = await self._one(a.Press(chord=chord))
        return pressed

    async def wait_until_still(self, settle_ms: int = 400, within_ms: int = 10_000) -> bool:
        """Wait until the screen stops changing for `settle_ms` (at most `within_ms`);
        whether it did."""
        done: r.Stillness = await self._one(a.WaitStill(settle_ms=settle_ms, within_ms=within_ms))
        return done.still

    async def screenshot(self) -> bytes:
        """The screen as a PNG."""
        return await self._driver.screenshot(self.screen)

    async def exec(self, argv: Sequence[str], *, timeout_ms: int = 10_000) -> r.ExecResult:
        """Run a program in the box (no shell: `["sh", "-c", "…"]` for one); a non-zero
        exit is in `code`, not raised."""
        return await self._driver.exec(a.ExecWhat(argv=list(argv), timeout_ms=timeout_ms))

    async def trace(self) -> TracePage:
        """What was done to the box, entry by entry (a `Computer` keeps no trace)."""
        return await self._driver.trace()


class Blocking(Generic[Owner, P, T]):
    """A coroutine method of `BoxMethods` (or `PageMethods`, `FileMethods`) as a plain
    method of the object that holds one as `_methods`: run to its end at once, its driver
    never waiting on an event loop."""

    def __init__(self, method: Callable[Concatenate[Owner, P], Coroutine[Any, Any, T]]) -> None:
        self._method = method

    def __get__(self, holder: Any, kind: type | None = None) -> Callable[P, T]:
        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            return run_to_the_end(self._method(holder._methods, *args, **kwargs))

        return call


def run_to_the_end(work: Coroutine[Any, Any, T]) -> T:
    """The value of a coroutine that never waits (its driver blocks instead)."""
    try:
        work.send(None)
    except StopIteration as done:
        value: T = done.value
        return value
    work.close()
    raise RuntimeError("a blocking box's call waited for an event loop")


class Page:
    """`PageMethods` as plain calls."""

    def __init__(self, methods: PageMethods) -> None:
        self._methods = methods

    click = Blocking(PageMethods.click)
    fill = Blocking(PageMethods.fill)
    choose = Blocking(PageMethods.choose)
    read = Blocking(PageMethods.read)
    find = Blocking(PageMethods.find)
    evaluate = Blocking(PageMethods.evaluate)


class Files:
    """`FileMethods` as plain calls."""

    def __init__(self, methods: FileMethods) -> None:
        self._methods = methods

    read = Blocking(FileMethods.read)
    read_text = Blocking(FileMethods.read_text)
    write = Blocking(FileMethods.write)
    list = Blocking(FileMethods.list)


class BlockingBox:
    """`BoxMethods` as plain calls: what `Box` and `Computer` share."""

    def __init__(self, methods: BoxMethods) -> None:
        self._methods = methods
        self.page = Page(methods.page)
        self.files = Files(methods.files)

    @property
    def id(self) -> str:
        return self._methods.id

    act = Blocking(BoxMethods.act)
    open = Blocking(BoxMethods.open)
    click = Blocking(BoxMethods.click)
    double_click = Blocking(BoxMethods.double_click)
    move = Blocking(BoxMethods.move)
    drag = Blocking(BoxMethods.drag)
    scroll = Blocking(BoxMethods.scroll)
    type = Blocking(BoxMethods.type)
    press = Blocking(BoxMethods.press)
    wait_until_still = Blocking(BoxMethods.wait_until_still)
    screenshot = Blocking(BoxMethods.screenshot)
    exec = Blocking(BoxMethods.exec)
    trace = Blocking(BoxMethods.trace)


def png_of(frame_base64: str | None) -> bytes:
    if frame_base64 is None:
        raise RuntimeError("the screen's capture came without a PNG")
    return base64.b64decode(frame_base64)


__all__ = [
    "BlockingBox",
    "BoxMethods",
    "Driver",
    "FileMethods",
    "Files",
    "Page",
    "PageMethods",
    "result_of",
    "run_to_the_end",
]
