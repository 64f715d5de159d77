"""The Python client of holmd's REST API (`/v1`), on aiohttp; the `holm` CLI is built on it.

    async with HolmClient() as holm:
        box = await holm.create_box(Spec(desktop=DesktopSpec(width=1024, height=768)))
        await holm.act(box.id, [OpenUrl(url="https://example.com")])

`SyncHolmClient` is the same client for scripts without an event loop: the same methods,
whose requests block (holm/blocking_http.py), so that neither aiohttp nor asyncio is
imported for it (most of a `holm` command's start, before).

The server's URL comes from `HOLM_SERVER_URL` (else `http://` + `HOLM_SERVER_ADDR`, else
`http://127.0.0.1:8080`) and its token from `HOLM_SERVER_TOKEN`, else, for a server on this
machine's loopback, from the token file holmd keeps in its state dir (`$HOLM_STATE_DIR`, else
`./var`; see `server_token`). An error response is raised
as the `holm.errors` class of its `code`; a server that cannot be reached at all raises
`ServerUnreachable`.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    Generic,
    Literal,
    ParamSpec,
    TypedDict,
    TypeVar,
    Unpack,
)
from urllib.parse import urlsplit

import msgspec

from holm.blocking_http import BlockingHttp, TransportError
from holm.errors import (
    ERRORS_BY_CODE,
    BadRequest,
    ErrorBody,
    HolmError,
    Internal,
    ServerUnreachable,
)
from holm.wire.access import is_loopback, state_dir_of, token_path
from holm.wire.actions import (
    DEFAULT_RECORD_FPS,
    Action,
    Arrange,
    ConsoleWhat,
    CookieIn,
    ElementOp,
    EvaluateWhat,
    ExecWhat,
    GrepWhat,
    NodeOp,
    OpenUrl,
    PageShotWhat,
    PdfWhat,
    SecretRef,
    StateLoadWhat,
    StateSaveWhat,
    WindowQuery,
    WriteWhat,
)
from holm.wire.api import (
    ActionsRequest,
    ActionsResult,
    AddRuntime,
    BoxList,
    BoxView,
    BuildImage,
    Catalog,
    CdpAddress,
    ChangeRuntime,
    ClipboardPut,
    CookiesPut,
    CreateBox,
    CreateKey,
    CreateWorkspace,
    ForkRequest,
    ForkResult,
    FrameView,
    GivenBack,
    Health,
    ImageInfo,
    ImageList,
    InstallApps,
    KeyList,
    KeyMade,
    KeyView,
    PruneResult,
    PutSecret,
    ReapResult,
    RecordingStart,
    RunResult,
    RuntimeList,
    RuntimeView,
    SavedState,
    SecretList,
    SecretView,
    StateList,
    StateRemoved,
    TakeoverRequest,
    TakeoverView,
    TicketRequest,
    TicketView,
    TraceImported,
    TraceList,
    TracePage,
    TraceShredded,
    TraceView,
    ViewerMode,
    ViewersView,
    WorkspaceList,
    WorkspaceView,
)
from holm.wire.computer_use import AnthropicResult, OpenAIResult
from holm.wire.feed import EventsPage
from holm.wire.results import (
    BrowserState,
    ClipboardView,
    ConsoleLog,
    Cookie,
    CookieList,
    ElementDone,
    Evaluated,
    ExecResult,
    FileData,
    FileList,
    FileSaved,
    Found,
    FoundWindow,
    GlobResult,
    GrepResult,
    NodeDone,
    PageOpened,
    PageShotTaken,
    PageSnapshot,
    PageText,
    Recording,
    StateLoaded,
    Tab,
    TabDone,
    TabList,
    WindowChanged,
    WindowInfo,
    WindowList,
    expect,
)
from holm.wire.spec import Placement, Spec
from holm.wire.values import ImageFormat, Point, Region, Selection

if TYPE_CHECKING:
    import aiohttp

    from holm.wire.diff import TraceDiff

DEFAULT_URL = "http://127.0.0.1:8080"

T = TypeVar("T")
P = ParamSpec("P")


class _RequestOptions(TypedDict, total=False):
    params: Mapping[str, object] | None
    body: object
    headers: Mapping[str, str] | None
    idempotency_key: str | None


def _computer_query(
    display: tuple[int, int] | None, format: str, quality: int | None, settle_ms: int
) -> dict[str, object]:
    params: dict[str, object] = {"format": format, "settle_ms": settle_ms}
    if display is not None:
        params.update(display_width=display[0], display_height=display[1])
    if quality is not None:
        params["quality"] = quality
    return params


def server_url(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    if env.get("HOLM_SERVER_URL"):
        return env["HOLM_SERVER_URL"].rstrip("/")
    if env.get("HOLM_SERVER_ADDR"):
        return "http://" + env["HOLM_SERVER_ADDR"]
    return DEFAULT_URL


def server_token(environ: Mapping[str, str] | None = None, url: str | None = None) -> str | None:
    """The token to send to `url` (default: `server_url`) when none is given:
    `HOLM_SERVER_TOKEN`, else the one holmd generated in `<state dir>/token`
    (`HOLM_STATE_DIR`, else `./var`). The file is read only for a server on loopback: that
    token opens a server on this machine, and is never sent to another."""
    env = os.environ if environ is None else environ
    if env.get("HOLM_SERVER_TOKEN"):
        return env["HOLM_SERVER_TOKEN"]
    try:
        host = urlsplit(url or server_url(env)).hostname
    except ValueError:
        return None
    if host is None or not is_loopback(host):
        return None
    try:
        return token_path(state_dir_of(env)).read_text().strip() or None
    except OSError:
        return None


def _http_url(url: str) -> str:
    """`url` when it names an http or https server; a bad request otherwise, before any
    request is made of it."""
    try:
        parts = urlsplit(url)
        named = parts.scheme in ("http", "https") and bool(parts.hostname)
        named = named and (parts.port is None or parts.port > 0)
    except ValueError:  # a port out of range, a bracket left open
        named = False
    if not named:
        raise BadRequest(f"{url!r} is not the http or https URL of a server")
    return url


# Body-less error answers (a proxy's, or aiohttp's own 404/405) still get a class by status.
_ERRORS_BY_STATUS: dict[int, type[HolmError]] = {}
for _cls in ERRORS_BY_CODE.values():
    _ERRORS_BY_STATUS.setdefault(_cls.status, _cls)


def error_from_response(status: int, body: bytes) -> HolmError:
    """The exception for an error answer: its body's `code` when it has one, else its
    status."""
    try:
        return HolmError.from_body(msgspec.json.decode(body, type=ErrorBody))
    except msgspec.DecodeError:
        cls = _ERRORS_BY_STATUS.get(status, Internal)
        text = body.decode(errors="replace").strip()[:500]
        return cls(f"HTTP {status}: {text}" if text else f"HTTP {status}")


def _query(params: Mapping[str, object]) -> dict[str, str]:
    """The query string's values; a parameter that is None is left out."""
    return {
        name: str(value).lower() if isinstance(value, bool) else str(value)
        for name, value in params.items()
        if value is not None
    }


class HolmClient:
    """One holmd, one aiohttp session. Use it as an async context manager, or call
    `close()`."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        connect_timeout: float = 10.0,
    ) -> None:
        self.url = _http_url((url or server_url()).rstrip("/"))
        self.token = token if token is not None else server_token(url=self.url)
        self._connect_timeout = connect_timeout
        # Sent with every request.
        self._auth = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> HolmClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _open_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            import aiohttp

            # No total timeout: an exec may run 10 minutes and a fork 3; the server bounds
            # them. Only the connection itself is bounded here.
            timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._connect_timeout)
            self._session = aiohttp.ClientSession(headers=self._auth, timeout=timeout)
        return self._session

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, object] | None = None,
        body: object = None,
        headers: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> tuple[int, bytes]:
        """Send one request; the status and body of a success, or the error raised."""
        sent_headers = dict(headers or {})
        data = None
        if body is not None:
            data = msgspec.json.encode(body)
            sent_headers["content-type"] = "application/json"
        if idempotency_key is not None:
            sent_headers["idempotency-key"] = idempotency_key
        status, payload = await self._send(method, path, _query(params or {}), data, sent_headers)
        if status >= 400:
            raise error_from_response(status, payload)
        return status, payload

    async def _send(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        data: bytes | None,
        headers: dict[str, str],
    ) -> tuple[int, bytes]:
        import aiohttp

        session = self._open_session()
        try:
            async with session.request(
                method, self.url + path, params=query, data=data, headers=headers
            ) as response:
                return response.status, await response.read()
        except aiohttp.ClientConnectionError as exc:
            raise self._unreachable(exc) from exc

    def _unreachable(self, exc: Exception) -> ServerUnreachable:
        return ServerUnreachable(f"cannot reach holmd at {self.url}: {exc}")

    async def _call(
        self, type_: type[T], method: str, path: str, **options: Unpack[_RequestOptions]
    ) -> T:
        _, payload = await self.request(method, path, **options)
        return msgspec.json.decode(payload, type=type_)

    # Health

    async def health(self) -> Health:
        return await self._call(Health, "GET", "/v1/health")

    # Boxes

    async def list_boxes(self) -> list[BoxView]:
        return (await self._call(BoxList, "GET", "/v1/boxes")).boxes

    async def create_box(
        self,
        spec: Spec | None = None,
        placement: Placement | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> BoxView:
        """A new box; its state is `starting` when the server queues its jobs."""
        body = CreateBox(spec=spec or Spec(), placement=placement or Placement())
        return await self._call(
            BoxView, "POST", "/v1/boxes", body=body, idempotency_key=idempotency_key
        )

    async def get_box(self, box_id: str) -> BoxView:
        return await self._call(BoxView, "GET", f"/v1/boxes/{box_id}")

    async def delete_box(self, box_id: str) -> BoxView:
        """Remove a box; the answer is its last view. Later calls to it raise `Gone`."""
        return await self._call(
            BoxView,
            "DELETE",
            f"/v1/boxes/{box_id}",
            headers={"x-holm-confirm-delete": "true"},
        )

    async def pause_box(self, box_id: str) -> BoxView:
        return await self._call(BoxView, "POST", f"/v1/boxes/{box_id}/pause")

    async def resume_box(self, box_id: str) -> BoxView:
        return await self._call(BoxView, "POST", f"/v1/boxes/{box_id}/resume")

    async def stop_box(self, box_id: str) -> BoxView:
        return await self._call(BoxView, "POST", f"/v1/boxes/{box_id}/stop")

    async def install_apps(self, box_id: str, apps: Sequence[str]) -> BoxView:
        body = InstallApps(apps=list(apps))
        return await self._call(BoxView, "POST", f"/v1/boxes/{box_id}/apps", body=body)

    async def catalog(self) -> Catalog:
        """The catalog's app names, and the Debian packages of each."""
        return await self._call(Catalog, "GET", "/v1/catalog")

    async def fork(
        self,
        box_id: str,
        *,
        up_to: int | None = None,
        placement: Placement | None = None,
        mode: Literal["replay", "snapshot"] = "replay",
        count: int = 1,
        idempotency_key: str | None = None,
        secrets: Mapping[str, str] | None = None,
    ) -> ForkResult:
        """A new box that does the source's recorded steps again (up to `up_to`); with
        `count` > 1, that many boxes replaying at once, each in `branches`; `secrets` the
        values of the secrets its steps name (over the workspace's)."""
        body = ForkRequest(
            mode=mode, up_to=up_to, placement=placement, count=count, secrets=dict(secrets or {})
        )
        return await self._call(
            ForkResult,
            "POST",
            f"/v1/boxes/{box_id}/fork",
            body=body,
            idempotency_key=idempotency_key,
        )

    # Screens

    async def act(
        self,
        box_id: str,
        actions: Sequence[Action] | ActionsRequest,
        *,
        screen: int = 0,
        idempotency_key: str | None = None,
    ) -> ActionsResult:
        """Run a batch: a list of actions, or a whole `ActionsRequest` (with `want`,
        `settle_ms`, `have_frame`, `keep_going`). A refused step does not raise: it is in
        `results` and `stopped_at`."""
        if not isinstance(actions, ActionsRequest):
            actions = ActionsRequest(actions=list(actions))
        return await self._call(
            ActionsResult,
            "POST",
            f"{_screen(box_id, screen)}/actions",
            body=actions,
            idempotency_key=idempotency_key,
        )

    async def frame(
        self,
        box_id: str,
        *,
        screen: int = 0,
        have: str | None = None,
        window: str | None = None,
        region: Region | None = None,
        scale: int | None = None,
        format: ImageFormat | None = None,
        quality: int | None = None,
    ) -> FrameView:
        """A capture: a PNG in `png_base64`, or with `format` a JPEG or WebP (at `quality`,
        1 to 100) in `image_base64`."""
        params: dict[str, object] = {
            "have": have,
            "window": window,
            "scale": scale,
            "format": format,
            "quality": quality,
        }
        if region is not None:
            params.update(x=region.x, y=region.y, width=region.width, height=region.height)
        return await self._call(FrameView, "GET", f"{_screen(box_id, screen)}/frame", params=params)

    async def viewer_ticket(
        self, box_id: str, *, screen: int = 0, mode: ViewerMode = "view"
    ) -> TicketView:
        """A 15-minute ticket for the screen's viewer socket and page (`url`)."""
        body = TicketRequest(mode=mode)
        path = f"{_screen(box_id, screen)}/viewer/ticket"
        return await self._call(TicketView, "POST", path, body=body)

    async def take_over(
        self, box_id: str, *, screen: int = 0, shared: bool = False
    ) -> TakeoverView:
        path = f"{_screen(box_id, screen)}/takeover"
        return await self._call(TakeoverView, "POST", path, body=TakeoverRequest(shared=shared))

    async def give_back(self, box_id: str, *, screen: int = 0) -> GivenBack:
        return await self._call(GivenBack, "DELETE", f"{_screen(box_id, screen)}/takeover")

    async def viewers(self, box_id: str, *, screen: int = 0) -> ViewersView:
        return await self._call(ViewersView, "GET", f"{_screen(box_id, screen)}/viewers")

    async def cursor(self, box_id: str, *, screen: int = 0) -> Point:
        return await self._call(Point, "GET", f"{_screen(box_id, screen)}/cursor")

    async def computer_anthropic(
        self,
        box_id: str,
        action: Mapping[str, object],
        *,
        screen: int = 0,
        display: tuple[int, int] | None = None,
        format: Literal["png", "jpeg"] = "png",
        quality: int | None = None,
        settle_ms: int = 0,
    ) -> AnthropicResult:
        """Do one action of Anthropic's `computer` tool (a `tool_use` block's `input` as it
        is); `display` is the size the model was told. The answer's `content` is the
        `tool_result`'s."""
        params = _computer_query(display, format, quality, settle_ms)
        path = f"{_screen(box_id, screen)}/computer/anthropic"
        return await self._call(AnthropicResult, "POST", path, body=action, params=params)

    async def computer_openai(
        self,
        box_id: str,
        action: Mapping[str, object],
        *,
        screen: int = 0,
        display: tuple[int, int] | None = None,
        format: Literal["png", "jpeg"] = "png",
        quality: int | None = None,
        settle_ms: int = 0,
    ) -> OpenAIResult:
        """Do one action of OpenAI's computer tool (a `computer_call`'s `action` as it is).
        The answer's `output` is the `computer_call_output`'s."""
        params = _computer_query(display, format, quality, settle_ms)
        path = f"{_screen(box_id, screen)}/computer/openai"
        return await self._call(OpenAIResult, "POST", path, body=action, params=params)

    async def get_clipboard(
        self, box_id: str, *, screen: int = 0, selection: Selection = "clipboard"
    ) -> str:
        answer = await self._call(
            ClipboardView,
            "GET",
            f"{_screen(box_id, screen)}/clipboard",
            params={"selection": selection},
        )
        return answer.text or ""

    async def set_clipboard(
        self,
        box_id: str,
        text: str,
        *,
        screen: int = 0,
        selection: Selection = "clipboard",
    ) -> ClipboardView:
        return await self._call(
            ClipboardView,
            "PUT",
            f"{_screen(box_id, screen)}/clipboard",
            body=ClipboardPut(text=text, selection=selection),
        )

    # Recording

    async def recording(self, box_id: str, *, screen: int = 0) -> Recording:
        """The screen's recording: the one running, else the last one."""
        return await self._call(Recording, "GET", f"{_screen(box_id, screen)}/recording")

    async def start_recording(
        self, box_id: str, *, screen: int = 0, fps: int = DEFAULT_RECORD_FPS
    ) -> Recording:
        path = f"{_screen(box_id, screen)}/recording"
        return await self._call(Recording, "POST", path, body=RecordingStart(fps=fps))

    async def stop_recording(self, box_id: str, *, screen: int = 0) -> Recording:
        """Stop the recording; its MP4 stays in the box at the answer's `path`."""
        return await self._call(Recording, "DELETE", f"{_screen(box_id, screen)}/recording")

    # Windows

    async def windows(self, box_id: str, *, screen: int = 0) -> list[WindowInfo]:
        path = f"{_screen(box_id, screen)}/windows"
        return (await self._call(WindowList, "GET", path)).windows

    async def active_window(self, box_id: str, *, screen: int = 0) -> WindowInfo | None:
        path = f"{_screen(box_id, screen)}/windows/active"
        found = (await self._call(WindowList, "GET", path)).windows
        return found[0] if found else None

    async def wait_window(
        self,
        box_id: str,
        *,
        class_: str | None = None,
        title: str | None = None,
        within_ms: int = 30_000,
        screen: int = 0,
    ) -> WindowInfo:
        query = WindowQuery(class_=class_, title=title, within_ms=within_ms)
        path = f"{_screen(box_id, screen)}/windows/wait"
        return (await self._call(FoundWindow, "POST", path, body=query)).window

    async def focus_window(self, box_id: str, window: str, *, screen: int = 0) -> WindowChanged:
        path = f"{_screen(box_id, screen)}/windows/{window}/focus"
        return await self._call(WindowChanged, "POST", path)

    async def arrange_window(
        self, box_id: str, window: str, how: Arrange, *, screen: int = 0
    ) -> WindowChanged:
        path = f"{_screen(box_id, screen)}/windows/{window}/arrange"
        return await self._call(WindowChanged, "POST", path, body=how)

    async def close_window(self, box_id: str, window: str, *, screen: int = 0) -> WindowChanged:
        path = f"{_screen(box_id, screen)}/windows/{window}"
        return await self._call(WindowChanged, "DELETE", path)

    # Pages (the Chromium of the box's first screen)

    async def tabs(self, box_id: str) -> list[Tab]:
        return (await self._call(TabList, "GET", f"/v1/boxes/{box_id}/pages")).tabs

    async def close_tab(self, box_id: str, tab: str) -> TabDone:
        return await self._call(TabDone, "DELETE", f"/v1/boxes/{box_id}/pages/{tab}")

    async def focus_tab(self, box_id: str, tab: str) -> TabDone:
        return await self._call(TabDone, "POST", f"/v1/boxes/{box_id}/pages/{tab}/focus")

    async def open_url(
        self,
        box_id: str,
        url: str,
        *,
        new_tab: bool = False,
        label: str | None = None,
        screen: int = 0,
    ) -> PageOpened:
        """Open `url` (in a new tab with `new_tab`), as a batch of one `open_url` step."""
        action = OpenUrl(url=url, target="blank" if new_tab else "current", label=label)
        result = await self.act(box_id, [action], screen=screen)
        return expect(_step_value(result, PageOpened), PageOpened)

    async def read_page(
        self,
        box_id: str,
        *,
        format: Literal["markdown", "text", "raw"] = "markdown",
        limit: int = 20_000,
        max_links: int = 100,
        tab: str | None = None,
    ) -> PageText:
        params = {"format": format, "limit": limit, "max_links": max_links, "tab": tab}
        return await self._call(PageText, "GET", f"/v1/boxes/{box_id}/page", params=params)

    async def find(
        self,
        box_id: str,
        query: str,
        *,
        limit: int = 10,
        exact: bool = False,
        role: str | None = None,
        tab: str | None = None,
    ) -> Found:
        params = {"q": query, "limit": limit, "exact": exact, "role": role, "tab": tab}
        return await self._call(Found, "GET", f"/v1/boxes/{box_id}/page/find", params=params)

    async def snapshot(
        self,
        box_id: str,
        *,
        scope: str | None = None,
        limit: int = 200,
        delta: bool = False,
        tab: str | None = None,
    ) -> PageSnapshot:
        params = {"scope": scope, "limit": limit, "delta": delta, "tab": tab}
        path = f"/v1/boxes/{box_id}/page/snapshot"
        return await self._call(PageSnapshot, "GET", path, params=params)

    async def element(
        self, box_id: str, what: ElementOp, *, tab: str | None = None, settle_ms: int = 0
    ) -> ElementDone:
        """One element operation (`ClickOp(query="Continue")`, `FillOp(...)`, …)."""
        params = {"tab": tab, "settle_ms": settle_ms}
        path = f"/v1/boxes/{box_id}/page/element"
        return await self._call(ElementDone, "POST", path, params=params, body=what)

    async def node(self, box_id: str, what: NodeOp, *, screen: int = 0) -> NodeDone:
        """One widget operation (`NodeFindOp(node=NodeQuery(query="Name", role="text"))`,
        `NodeSetOp(...)`, …) through the box's accessibility bus."""
        path = f"/v1/boxes/{box_id}/screens/{screen}/desktop/node"
        return await self._call(NodeDone, "POST", path, body=what)

    async def evaluate(
        self,
        box_id: str,
        expression: str,
        *,
        timeout_ms: int = 5000,
        limit: int = 2000,
        tab: str | None = None,
    ) -> Evaluated:
        body = EvaluateWhat(expression=expression, timeout_ms=timeout_ms, limit=limit)
        path = f"/v1/boxes/{box_id}/page/evaluate"
        return await self._call(Evaluated, "POST", path, params={"tab": tab}, body=body)

    async def page_screenshot(self, box_id: str, what: PageShotWhat | None = None) -> PageShotTaken:
        path = f"/v1/boxes/{box_id}/page/screenshot"
        return await self._call(PageShotTaken, "POST", path, body=what or PageShotWhat())

    async def page_pdf(self, box_id: str, what: PdfWhat | None = None) -> FileSaved:
        return await self._call(
            FileSaved, "POST", f"/v1/boxes/{box_id}/page/pdf", body=what or PdfWhat()
        )

    async def console(
        self,
        box_id: str,
        *,
        errors: bool = False,
        clear: bool = False,
        limit: int = 100,
        tab: str | None = None,
    ) -> ConsoleLog:
        what = ConsoleWhat(errors=errors, clear=clear, limit=limit, tab=tab)
        return await self._call(ConsoleLog, "POST", f"/v1/boxes/{box_id}/page/console", body=what)

    async def cookies(self, box_id: str, *, url: str | None = None) -> list[Cookie]:
        path = f"/v1/boxes/{box_id}/cookies"
        return (await self._call(CookieList, "GET", path, params={"url": url})).cookies

    async def set_cookies(
        self, box_id: str, cookies: Sequence[CookieIn], *, url: str | None = None
    ) -> CookieList:
        body = CookiesPut(cookies=list(cookies), url=url)
        return await self._call(CookieList, "POST", f"/v1/boxes/{box_id}/cookies", body=body)

    async def clear_cookies(self, box_id: str, *, url: str | None = None) -> CookieList:
        path = f"/v1/boxes/{box_id}/cookies"
        return await self._call(CookieList, "DELETE", path, params={"url": url})

    async def save_state(
        self, box_id: str, what: StateSaveWhat | None = None, *, name: str | None = None
    ) -> BrowserState:
        """The browser's cookies and storage: kept by the server under `name`, or handed
        back in `session_json` without one."""
        body = what or StateSaveWhat()
        if name is not None:
            body = msgspec.structs.replace(body, name=name)
        path = f"/v1/boxes/{box_id}/state/save"
        return await self._call(BrowserState, "POST", path, body=body)

    async def load_state(
        self, box_id: str, *, name: str | None = None, session_json: str | None = None
    ) -> StateLoaded:
        body = StateLoadWhat(name=name, session_json=session_json)
        path = f"/v1/boxes/{box_id}/state/load"
        return await self._call(StateLoaded, "POST", path, body=body)

    async def states(self) -> list[SavedState]:
        return (await self._call(StateList, "GET", "/v1/states")).states

    async def remove_state(self, name: str) -> StateRemoved:
        return await self._call(StateRemoved, "DELETE", f"/v1/states/{name}")

    async def devtools(self, box_id: str, *, ttl_secs: int = 3600) -> CdpAddress:
        """A DevTools address of the box's browser for Playwright's `connect_over_cdp` or
        browser-use, good for `ttl_secs`."""
        params = {"ttl_secs": ttl_secs}
        return await self._call(CdpAddress, "POST", f"/v1/boxes/{box_id}/cdp", params=params)

    # Files and commands

    async def exec(
        self,
        box_id: str,
        argv: Sequence[str | SecretRef],
        *,
        timeout_ms: int = 10_000,
        env: Mapping[str, str | SecretRef] | None = None,
    ) -> ExecResult:
        """Run a command; its exit code is in the result (a non-zero code does not raise).
        An argument or a variable of `env` may be a `SecretRef` (a secret by name)."""
        body = ExecWhat(argv=list(argv), timeout_ms=timeout_ms, env=dict(env or {}))
        return await self._call(ExecResult, "POST", f"/v1/boxes/{box_id}/exec", body=body)

    async def read_file(self, box_id: str, path: str) -> bytes:
        answer = await self._call(
            FileData, "GET", f"/v1/boxes/{box_id}/files", params={"path": path}
        )
        return base64.b64decode(answer.contents_base64)

    async def write_file(self, box_id: str, path: str, contents: bytes) -> FileSaved:
        body = WriteWhat(path=path, contents_base64=base64.b64encode(contents).decode())
        return await self._call(FileSaved, "PUT", f"/v1/boxes/{box_id}/files", body=body)

    async def list_files(self, box_id: str, path: str) -> FileList:
        return await self._call(
            FileList, "GET", f"/v1/boxes/{box_id}/files/list", params={"path": path}
        )

    async def grep(
        self,
        box_id: str,
        pattern: str,
        *,
        path: str = "/",
        include: str | None = None,
        ignore_case: bool = False,
        limit: int = 200,
    ) -> GrepResult:
        body = GrepWhat(
            pattern=pattern, path=path, include=include, ignore_case=ignore_case, limit=limit
        )
        return await self._call(GrepResult, "POST", f"/v1/boxes/{box_id}/files/grep", body=body)

    async def glob(
        self, box_id: str, pattern: str, *, path: str = "/", limit: int = 200
    ) -> GlobResult:
        return await self._call(
            GlobResult,
            "GET",
            f"/v1/boxes/{box_id}/files/glob",
            params={"pattern": pattern, "path": path, "limit": limit},
        )

    # History

    async def trace(
        self, box_id: str, *, after: int | None = None, limit: int | None = None
    ) -> TracePage:
        """One page of the trace; send its `next` as `after` to read on."""
        return await self._call(
            TracePage,
            "GET",
            f"/v1/boxes/{box_id}/trace",
            params={"after": after, "limit": limit},
        )

    async def traces(self) -> list[TraceView]:
        """Every trace the server keeps, removed boxes' included."""
        return (await self._call(TraceList, "GET", "/v1/traces")).traces

    async def trace_frame(self, box_id: str, frame_hash: str) -> bytes:
        """The PNG of a frame the trace refers to."""
        _, png = await self.request("GET", f"/v1/boxes/{box_id}/trace/frames/{frame_hash}")
        return png

    async def import_trace(self, archive: bytes) -> TraceImported:
        """Import a `.holm` file's bytes (holm/wire/archive.py) under a new trace ID."""
        headers = {"content-type": "application/zip"}
        status, payload = await self._send("POST", "/v1/traces", {}, archive, headers)
        if status >= 400:
            raise error_from_response(status, payload)
        return msgspec.json.decode(payload, type=TraceImported)

    async def trace_view(
        self, box_id: str, *, beside: str | None = None, fork_control: bool = False
    ) -> bytes:
        """The trace as one self-contained HTML page (UTF-8); `beside`: a box whose trace
        is shown beside it (a fork's source), steps aligned as in `diff`. `fork_control`:
        with the served page's "fork from here" button and the short-lived grant it
        sends; off by default, since a page fetched by a program is kept as a file."""
        params = {"with": beside, "fork": "true" if fork_control else "false"}
        _, page = await self.request("GET", f"/v1/boxes/{box_id}/trace/view", params=params)
        return page

    async def diff(self, box_a: str, box_b: str) -> TraceDiff:
        """How close two boxes' traces are (a source and its fork): steps aligned by key,
        and the last frames compared pixel by pixel. Removed boxes too."""
        from holm.wire.diff import TraceDiff  # the engine's module: only when asked for

        return await self._call(TraceDiff, "GET", f"/v1/boxes/{box_a}/diff/{box_b}")

    async def events(self, *, after: int | None = None, limit: int | None = None) -> EventsPage:
        """One page of the events feed; send its `next` as `after` to read on."""
        return await self._call(
            EventsPage, "GET", "/v1/events", params={"after": after, "limit": limit}
        )

    # Runtimes

    async def runtimes(self) -> list[RuntimeView]:
        return (await self._call(RuntimeList, "GET", "/v1/runtimes")).runtimes

    async def runtime(self, name: str) -> RuntimeView:
        return await self._call(RuntimeView, "GET", f"/v1/runtimes/{name}")

    async def add_runtime(
        self,
        name: str,
        provider: str,
        fields: dict[str, Any] | None = None,
        secrets: dict[str, str] | None = None,
    ) -> RuntimeView:
        """Add a remote runtime (the server token only); its secrets are sealed by the
        server and never given back."""
        body = AddRuntime(name=name, provider=provider, fields=fields or {}, secrets=secrets or {})
        return await self._call(RuntimeView, "POST", "/v1/runtimes", body=body)

    async def change_runtime(
        self,
        name: str,
        fields: dict[str, Any] | None = None,
        secrets: dict[str, str] | None = None,
    ) -> RuntimeView:
        """Set fields (`None` removes one) and secrets of a runtime added; the others stay."""
        body = ChangeRuntime(fields=fields or {}, secrets=secrets or {})
        return await self._call(RuntimeView, "PATCH", f"/v1/runtimes/{name}", body=body)

    async def remove_runtime(self, name: str) -> RuntimeView:
        """Remove a runtime added (`Denied` while a box uses it)."""
        return await self._call(RuntimeView, "DELETE", f"/v1/runtimes/{name}")

    # Images (of the runtimes that build them; another answers `Unsupported`)

    async def build_image(self, runtime: str, spec: Spec | None = None) -> ImageInfo:
        """The image of `spec` on `runtime`, built when missing (`state: building` at once
        when the server queues its jobs)."""
        body = BuildImage(spec=spec or Spec())
        return await self._call(ImageInfo, "POST", f"/v1/runtimes/{runtime}/image", body=body)

    async def images(self, runtime: str | None = None) -> list[ImageInfo]:
        """The images of one runtime, or of every runtime."""
        path = "/v1/images" if runtime is None else f"/v1/runtimes/{runtime}/images"
        return (await self._call(ImageList, "GET", path)).images

    async def image(self, runtime: str, digest: str) -> ImageInfo:
        return await self._call(ImageInfo, "GET", f"/v1/runtimes/{runtime}/images/{digest}")

    async def remove_image(self, runtime: str, digest: str) -> ImageInfo:
        path = f"/v1/runtimes/{runtime}/images/{digest}"
        return await self._call(ImageInfo, "DELETE", path)

    # Scheduled work

    async def reap(self) -> ReapResult:
        return await self._call(ReapResult, "POST", "/v1/jobs/reap")

    async def prune(self) -> PruneResult:
        return await self._call(PruneResult, "POST", "/v1/jobs/prune")

    async def run_jobs(self) -> RunResult:
        return await self._call(RunResult, "POST", "/v1/jobs/run")

    # Workspaces and API keys (the server token only)

    async def create_workspace(self, name: str) -> WorkspaceView:
        body = CreateWorkspace(name=name)
        return await self._call(WorkspaceView, "POST", "/v1/workspaces", body=body)

    async def workspaces(self) -> list[WorkspaceView]:
        return (await self._call(WorkspaceList, "GET", "/v1/workspaces")).workspaces

    async def create_key(self, workspace: str) -> KeyMade:
        """A new key of `workspace` (its name or id): `key` is shown here and never again."""
        body = CreateKey(workspace=workspace)
        return await self._call(KeyMade, "POST", "/v1/keys", body=body)

    async def keys(self, workspace: str | None = None) -> list[KeyView]:
        params = {"workspace": workspace}
        return (await self._call(KeyList, "GET", "/v1/keys", params=params)).keys

    async def remove_key(self, key_id: str) -> KeyView:
        return await self._call(KeyView, "DELETE", f"/v1/keys/{key_id}")

    # Named secrets (the caller's workspace's) and a trace's data key

    async def set_secret(self, name: str, value: str) -> SecretView:
        """Set a named secret for `secret: NAME` steps; its value is never answered."""
        body = PutSecret(value=value)
        return await self._call(SecretView, "PUT", f"/v1/secrets/{name}", body=body)

    async def secrets(self) -> list[SecretView]:
        return (await self._call(SecretList, "GET", "/v1/secrets")).secrets

    async def remove_secret(self, name: str) -> None:
        await self.request("DELETE", f"/v1/secrets/{name}")

    async def shred_trace(self, box_id: str) -> TraceShredded:
        """Destroy the trace's data key: a person's text it kept sealed is gone for good."""
        return await self._call(TraceShredded, "DELETE", f"/v1/boxes/{box_id}/trace/secrets")


def _step_value(result: ActionsResult, kind: type[T]) -> T:
    """The value of a batch of one step, or the error it stopped with."""
    step = result.results[0]
    if step.error is not None:
        raise HolmError.from_body(step.error)
    return msgspec.convert(step.value, kind)


def _screen(box_id: str, screen: int) -> str:
    return f"/v1/boxes/{box_id}/screens/{screen}"


class _BlockingHolmClient(HolmClient):
    """`HolmClient` whose requests block (holm/blocking_http.py): its coroutines wait on
    nothing, so each runs to its end at its first step, in the caller's thread."""

    def __init__(self, url: str | None, token: str | None) -> None:
        super().__init__(url, token)
        self._http = BlockingHttp(self.url, self._connect_timeout)

    async def _send(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        data: bytes | None,
        headers: dict[str, str],
    ) -> tuple[int, bytes]:
        try:
            return self._http.send(method, path, query, data, {**self._auth, **headers})
        except TransportError as exc:
            raise self._unreachable(exc) from exc

    async def close(self) -> None:
        self._http.close()


def _to_the_end(work: Coroutine[Any, Any, T]) -> T:
    """The value of a coroutine of `_BlockingHolmClient`, run without an event loop: it
    never waits, so its first step is its whole run."""
    try:
        work.send(None)
    except StopIteration as done:
        value: T = done.value
        return value
    work.close()
    raise RuntimeError("a SyncHolmClient call waited for an event loop")


class _Sync(Generic[P, T]):
    """A method of `SyncHolmClient`: the same method of `HolmClient`, run to its end."""

    def __init__(
        self, method: Callable[Concatenate[HolmClient, P], Coroutine[Any, Any, T]]
    ) -> None:
        self._method = method

    def __get__(self, owner: SyncHolmClient, kind: type[SyncHolmClient]) -> Callable[P, T]:
        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            return _to_the_end(self._method(owner.client, *args, **kwargs))

        return call


class SyncHolmClient:
    """`HolmClient` for code without an event loop, or inside one (a notebook's): each
    call blocks its thread until the answer is in. Threads may share one: each has its
    own connection."""

    def __init__(self, url: str | None = None, token: str | None = None) -> None:
        self.client: HolmClient = _BlockingHolmClient(url, token)

    @property
    def url(self) -> str:
        return self.client.url

    def close(self) -> None:
        _to_the_end(self.client.close())

    def __enter__(self) -> SyncHolmClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    request = _Sync(HolmClient.request)
    health = _Sync(HolmClient.health)
    list_boxes = _Sync(HolmClient.list_boxes)
    create_box = _Sync(HolmClient.create_box)
    get_box = _Sync(HolmClient.get_box)
    delete_box = _Sync(HolmClient.delete_box)
    pause_box = _Sync(HolmClient.pause_box)
    resume_box = _Sync(HolmClient.resume_box)
    stop_box = _Sync(HolmClient.stop_box)
    install_apps = _Sync(HolmClient.install_apps)
    catalog = _Sync(HolmClient.catalog)
    fork = _Sync(HolmClient.fork)
    set_secret = _Sync(HolmClient.set_secret)
    secrets = _Sync(HolmClient.secrets)
    remove_secret = _Sync(HolmClient.remove_secret)
    shred_trace = _Sync(HolmClient.shred_trace)
    act = _Sync(HolmClient.act)
    frame = _Sync(HolmClient.frame)
    cursor = _Sync(HolmClient.cursor)
    computer_anthropic = _Sync(HolmClient.computer_anthropic)
    computer_openai = _Sync(HolmClient.computer_openai)
    viewer_ticket = _Sync(HolmClient.viewer_ticket)
    take_over = _Sync(HolmClient.take_over)
    give_back = _Sync(HolmClient.give_back)
    viewers = _Sync(HolmClient.viewers)
    get_clipboard = _Sync(HolmClient.get_clipboard)
    set_clipboard = _Sync(HolmClient.set_clipboard)
    recording = _Sync(HolmClient.recording)
    start_recording = _Sync(HolmClient.start_recording)
    stop_recording = _Sync(HolmClient.stop_recording)
    windows = _Sync(HolmClient.windows)
    active_window = _Sync(HolmClient.active_window)
    wait_window = _Sync(HolmClient.wait_window)
    focus_window = _Sync(HolmClient.focus_window)
    arrange_window = _Sync(HolmClient.arrange_window)
    close_window = _Sync(HolmClient.close_window)
    tabs = _Sync(HolmClient.tabs)
    close_tab = _Sync(HolmClient.close_tab)
    focus_tab = _Sync(HolmClient.focus_tab)
    open_url = _Sync(HolmClient.open_url)
    read_page = _Sync(HolmClient.read_page)
    find = _Sync(HolmClient.find)
    snapshot = _Sync(HolmClient.snapshot)
    element = _Sync(HolmClient.element)
    node = _Sync(HolmClient.node)
    evaluate = _Sync(HolmClient.evaluate)
    page_screenshot = _Sync(HolmClient.page_screenshot)
    page_pdf = _Sync(HolmClient.page_pdf)
    console = _Sync(HolmClient.console)
    cookies = _Sync(HolmClient.cookies)
    set_cookies = _Sync(HolmClient.set_cookies)
    clear_cookies = _Sync(HolmClient.clear_cookies)
    save_state = _Sync(HolmClient.save_state)
    load_state = _Sync(HolmClient.load_state)
    states = _Sync(HolmClient.states)
    remove_state = _Sync(HolmClient.remove_state)
    devtools = _Sync(HolmClient.devtools)
    exec = _Sync(HolmClient.exec)
    read_file = _Sync(HolmClient.read_file)
    write_file = _Sync(HolmClient.write_file)
    list_files = _Sync(HolmClient.list_files)
    grep = _Sync(HolmClient.grep)
    glob = _Sync(HolmClient.glob)
    traces = _Sync(HolmClient.traces)
    trace = _Sync(HolmClient.trace)
    trace_frame = _Sync(HolmClient.trace_frame)
    trace_view = _Sync(HolmClient.trace_view)
    import_trace = _Sync(HolmClient.import_trace)
    diff = _Sync(HolmClient.diff)
    events = _Sync(HolmClient.events)
    runtimes = _Sync(HolmClient.runtimes)
    runtime = _Sync(HolmClient.runtime)
    add_runtime = _Sync(HolmClient.add_runtime)
    change_runtime = _Sync(HolmClient.change_runtime)
    remove_runtime = _Sync(HolmClient.remove_runtime)
    build_image = _Sync(HolmClient.build_image)
    images = _Sync(HolmClient.images)
    image = _Sync(HolmClient.image)
    remove_image = _Sync(HolmClient.remove_image)
    reap = _Sync(HolmClient.reap)
    prune = _Sync(HolmClient.prune)
    run_jobs = _Sync(HolmClient.run_jobs)
    create_workspace = _Sync(HolmClient.create_workspace)
    workspaces = _Sync(HolmClient.workspaces)
    create_key = _Sync(HolmClient.create_key)
    keys = _Sync(HolmClient.keys)
    remove_key = _Sync(HolmClient.remove_key)


__all__ = [
    "DEFAULT_URL",
    "HolmClient",
    "ServerUnreachable",
    "SyncHolmClient",
    "error_from_response",
    "server_token",
    "server_url",
]
