"""The request and response bodies of the REST API (docs/api.md) that are not already in
`holm.wire.spec`, `holm.wire.actions`, `holm.adapters.base` or `holm.events`.

Requests refuse unknown fields, so a misspelled key is an error that names it. Query strings
are decoded into Structs too (`…Query`), so that a bad parameter gets the same kind of
message as a bad body. The OpenAPI document is generated from these types.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from holm.errors import ErrorBody
from holm.wire.actions import (
    DEFAULT_RECORD_FPS,
    MAX_WAIT_MS,
    Action,
    CookieIn,
    Fps,
    ReadWhat,
    SnapshotWhat,
)
from holm.wire.diff import StepRef
from holm.wire.entries import PAGE_MAX, Entry
from holm.wire.feed import LIMIT_DEFAULT, LIMIT_MAX
from holm.wire.results import ExecResult, Tab, WindowInfo
from holm.wire.runtime import Capabilities, Room
from holm.wire.spec import MAX_SCREENS, Feature, Placement, Spec
from holm.wire.values import ImageFormat, Point, Quality, Selection, encoding_of

BoxStateName = Literal["starting", "ready", "paused", "stopped", "unreachable", "gone", "failed"]

MAX_SCALE = 400
MAX_CDP_TTL_SECS = 24 * 3600


class _Request(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    pass


class _Response(msgspec.Struct, omit_defaults=True, kw_only=True):
    pass


# Health


class Health(_Response):
    ok: bool
    service: str


# Boxes


class CreateBox(_Request):
    """`POST /v1/boxes`. Every field is optional: `{}` is a box with the defaults."""

    spec: Spec = msgspec.field(default_factory=Spec)
    placement: Placement = msgspec.field(default_factory=Placement)


class ForkOrigin(msgspec.Struct, omit_defaults=True, kw_only=True, frozen=True):
    source: str
    up_to: int | None = None


class VncDoorView(_Response):
    """Where a standard VNC client reaches one screen of a box with `auth: "password"`:
    `vnc://host:port`, RFB's VNC authentication."""

    screen: int
    host: str
    port: int
    url: str


class VncAccess(_Response):
    """A password box's VNC doors; `password` is in the answer that made the box only
    (create, fork), and only when holmd generated it (not given by `password_secret`)."""

    doors: list[VncDoorView] = msgspec.field(default_factory=list)
    password: str | None = None


class BoxView(_Response):
    """A box in a response. Fields with no value (`reason`, `owner`, …) are left out."""

    id: str
    runtime: str
    spec_digest: str
    state: BoxStateName
    screens: int
    width: int
    height: int
    created_at_ms: int
    expires_at_ms: int
    spec: Spec
    placement: Placement
    reason: str | None = None
    viewer_url: str | None = None
    viewer_urls: list[str] = msgspec.field(default_factory=list)
    devtools_url: str | None = None
    owner: str | None = None
    forked_from: ForkOrigin | None = None
    adopted: bool = False
    # Beyond the spec's example: the VNC doors of a box with `spec.policy.auth: "password"`.
    vnc: VncAccess | None = None


class BoxList(_Response):
    boxes: list[BoxView]


class InstallApps(_Request):
    apps: Annotated[list[str], Meta(min_length=1)]


class Catalog(_Response):
    apps: list[str]
    # Each app's Debian packages: what a spec's `apps` adds to a docker box's image, and
    # what `POST …/apps` installs (empty: every box has it).
    packages: dict[str, list[str]] = msgspec.field(default_factory=dict)


# Screens


class ActionsRequest(_Request):
    """`POST …/screens/{screen}/actions`: a batch that holds the screen for all its steps."""

    actions: list[Action]
    want: list[Literal["frame", "cursor"]] = msgspec.field(default_factory=list)
    settle_ms: Annotated[int, Meta(ge=0, le=MAX_WAIT_MS)] = 0
    have_frame: str | None = None
    keep_going: bool = False
    # Beyond the spec: the values of the secrets the steps name (`secret: NAME`), which
    # override the workspace's; the trace keeps the names, never these.
    secrets: dict[str, str] = msgspec.field(default_factory=dict)
    # Beyond the spec: the frame of `want` as JPEG or WebP, as `GET …/frame` takes them.
    frame_format: ImageFormat = "png"
    frame_quality: Quality | None = None
    # Beyond the spec: the frame of `want` scaled (percent), as `GET …/frame` takes it.
    frame_scale: Annotated[int, Meta(ge=1, le=MAX_SCALE)] = 100

    def __post_init__(self) -> None:
        # A quality with png is refused at decode (a 400 before any step), not ignored.
        encoding_of(self.frame_format, self.frame_quality)


class StepResult(_Response):
    """What one step of a batch gave: `value` holds what a reading step read."""

    index: int
    type: str
    ok: bool
    error: ErrorBody | None = None
    # The action's result (holm.wire.results), as its own REST route answers it.
    value: Any = None


class FrameView(_Response):
    """A capture. With `unchanged: true` there is no picture; otherwise a PNG is in
    `png_base64` (the spec's), a JPEG or WebP in `image_base64`, as `format` says."""

    hash: str
    unchanged: bool
    width: int
    height: int
    png_base64: str | None = None
    format: ImageFormat = "png"
    image_base64: str | None = None


class Holding(_Response):
    """A button or key still down after a batch, and when the server will release it."""

    name: str
    release_at_ms: int | None = None


class ActionsResult(_Response):
    results: list[StepResult]
    stopped_at: int | None
    windows: list[WindowInfo]
    # The tabs of the screen's Chromium after the batch (none when it runs none).
    tabs: list[Tab]
    released: list[str]
    released_keys: list[str]
    holding: list[Holding]
    holding_keys: list[Holding]
    frame: FrameView | None = None
    cursor: Point | None = None


class FrameQuery(_Request):
    have: str | None = None
    window: str | None = None
    x: Annotated[int, Meta(ge=0)] | None = None
    y: Annotated[int, Meta(ge=0)] | None = None
    width: Annotated[int, Meta(ge=1)] | None = None
    height: Annotated[int, Meta(ge=1)] | None = None
    scale: Annotated[int, Meta(ge=1, le=MAX_SCALE)] = 100
    # Beyond the spec: what a model reads best, at a quality (jpeg and webp only).
    format: ImageFormat = "png"
    quality: Quality | None = None

    def __post_init__(self) -> None:
        # A quality with png is refused at decode (a 400), not ignored.
        encoding_of(self.format, self.quality)


class ClipboardQuery(_Request):
    selection: Selection = "clipboard"


class ClipboardPut(_Request):
    text: str
    selection: Selection = "clipboard"


class RecordingStart(_Request):
    fps: Fps = DEFAULT_RECORD_FPS


# Pages


# Which screen's Chromium a page route drives (each screen has its own, with its own
# profile): the first when absent.
PageScreen = Annotated[int, Meta(ge=0, lt=MAX_SCREENS)]


class ScreenQuery(_Request):
    """`screen`: the screen whose Chromium a page route drives (default 0)."""

    screen: PageScreen = 0


class TabQuery(ScreenQuery):
    """`tab`: a tab ID or label; the front tab when absent."""

    tab: str | None = None


class FindQuery(ScreenQuery, kw_only=True):
    q: Annotated[str, Meta(min_length=1, max_length=2000)]
    limit: Annotated[int, Meta(ge=1, le=10_000)] = 10
    scroll: bool = False
    exact: bool = False
    role: str | None = None
    tab: str | None = None


class UrlQuery(ScreenQuery):
    url: str | None = None


class ReadQuery(ReadWhat, forbid_unknown_fields=True, kw_only=True):
    """`GET …/page`: what to read, and of which screen's Chromium."""

    screen: PageScreen = 0


class SnapshotQuery(SnapshotWhat, forbid_unknown_fields=True, kw_only=True):
    """`GET …/page/snapshot`: what to list, and of which screen's Chromium."""

    screen: PageScreen = 0


class CdpQuery(_Request):
    """`POST …/cdp`: how long the DevTools address lives (1 s to 24 h), and whose Chromium
    it reaches: each screen runs its own (default screen 0)."""

    ttl_secs: Annotated[int, Meta(ge=1, le=MAX_CDP_TTL_SECS)] = 3600
    screen: PageScreen = 0


class CdpAddress(msgspec.Struct, kw_only=True):
    """A box's DevTools for the user's own tools: `url` for Playwright's
    `connect_over_cdp` and browser-use, `ws_url` for a raw CDP client."""

    url: str
    ws_url: str
    expires_at_ms: int


class CookiesPut(_Request):
    cookies: Annotated[list[CookieIn], Meta(min_length=1)]
    url: str | None = None


class ElementQuery(ScreenQuery):
    settle_ms: Annotated[int, Meta(ge=0, le=MAX_WAIT_MS)] = 0
    tab: str | None = None


# Windows


class Done(_Response):
    ok: bool


# Files and commands


class PathQuery(_Request):
    path: Annotated[str, Meta(min_length=1)]


# History


class TraceQuery(_Request):
    after: Annotated[int, Meta(ge=-1)] | None = None
    limit: Annotated[int, Meta(ge=1, le=PAGE_MAX)] = PAGE_MAX


class TraceViewQuery(_Request):
    """`with`: a box whose trace is shown beside this one (its source, for a fork), steps
    aligned as `holm diff` aligns them. `fork` (a page of one trace): a "fork from here"
    button, authorised by a short-lived grant put in the page; `false` for a page that is
    to be kept as a file."""

    with_: str | None = msgspec.field(default=None, name="with")
    fork: bool = True


class TracePage(_Response, omit_defaults=False):
    """A page of a trace. Send `next` as `after` to read on; `more` says there is more now.
    `incomplete` says a writer died mid-line (the torn line is not served). `first_seq` is
    where the trace begins now: above 0 once its front was pruned, when every entry from it
    on is kept, and before it only those its box's state is folded from. Every field is
    written, 0 too, as docs/api.md lists them."""

    entries: list[Entry]
    next: int
    more: bool
    incomplete: bool
    first_seq: int = 0


class TraceView(_Response, omit_defaults=False):
    """One trace the store keeps (`GET /v1/traces`, `holm trace ls --json`): its figures,
    and the box it records as the box projection has it. The server's own trace (`server`)
    records no box: its `runtime` and `state` are null. Every field is written, so that a
    listing read with jq never meets a missing key."""

    trace: str
    # Entries kept, and the time of the first and last of them.
    entries: int
    first_at_ms: int | None = None
    last_at_ms: int | None = None
    # The `frame` entries the box's trace recorded (the screen changed).
    frames: int = 0
    incomplete: bool = False
    runtime: str | None = None
    state: BoxStateName | None = None
    reason: str | None = None
    forked_from: ForkOrigin | None = None
    adopted: bool = False


class TraceList(_Response):
    traces: list[TraceView]


# Events


class EventsQuery(_Request):
    after: Annotated[int, Meta(ge=0)] = 0
    limit: Annotated[int, Meta(ge=1, le=LIMIT_MAX)] = LIMIT_DEFAULT


# Runtimes


class StreamQuery(_Request):
    """`GET /v1/boxes/{id}/streams/{kind}`: which screen's VNC server or DevTools."""

    screen: Annotated[int, Meta(ge=0, lt=MAX_SCREENS)] = 0


RuntimeName = Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
# A secret's value as given; the server seals it and never gives it back.
SecretValue = Annotated[str, Meta(max_length=64 * 1024)]


class AddRuntime(_Request):
    """`POST /v1/runtimes`: a remote runtime (a vendor) of `provider`, with the fields and
    secrets that provider takes (docs/runtimes.md)."""

    name: RuntimeName
    provider: str
    fields: dict[str, Any] = msgspec.field(default_factory=dict)
    secrets: dict[str, SecretValue] = msgspec.field(default_factory=dict)

    def __repr__(self) -> str:
        return f"AddRuntime(name={self.name!r}, provider={self.provider!r}, secrets=<sealed>)"


class ChangeRuntime(_Request):
    """`PATCH /v1/runtimes/{name}`: fields and secrets to set, each by its name (the others
    stay as they were); a field given `null` is removed."""

    fields: dict[str, Any] = msgspec.field(default_factory=dict)
    secrets: dict[str, SecretValue] = msgspec.field(default_factory=dict)

    def __repr__(self) -> str:
        return "ChangeRuntime(secrets=<sealed>)"


class PoolView(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The warm pool's spares of one spec (`HOLM_POOL`): `count` asked for, `ready` up
    and not taken, `booting` on their way; `known` false until the server has seen the spec
    (by its digest alone it cannot boot one). While spares do not start, `failures` in a
    row, the last one's message and time, and when the pool tries again."""

    spec_digest: str
    count: int
    ready: int
    booting: int
    known: bool
    failures: int = 0
    last_failure: str | None = None
    last_failure_at_ms: int | None = None
    next_retry_at_ms: int | None = None


class RuntimeView(_Response):
    name: str
    default: bool
    can: Capabilities
    # A runtime added with `POST /v1/runtimes`: its provider, fields, and the names of its
    # secrets (never their values).
    provider: str | None = None
    fields: dict[str, Any] | None = None
    secrets: list[str] | None = None
    # Beyond the spec: how many more boxes the host can take, where the runtime can tell.
    room: Room | None = None
    # The warm pool's spares on this runtime, per spec; absent without a pool here.
    pool: list[PoolView] | None = None
    # With replicas (docs/scale.md): the id of the holmd that answered; `pool` is that
    # holmd's own (each keeps its own spares, and a create takes one of the holmd it
    # reached).
    replica: str | None = None


class RuntimeList(_Response):
    runtimes: list[RuntimeView]


class BuildImage(_Request):
    """`POST /v1/runtimes/{name}/image`: build the image of a spec before a box needs it."""

    spec: Spec = msgspec.field(default_factory=Spec)


BuildState = Literal["building", "failed"]


class ImageInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An image as the images API shows it; `state` is absent when it is built."""

    runtime: str
    # `holm-box:<key>`, empty while it builds or after it failed.
    image: str
    # The key, which `GET/DELETE …/images/{digest}` take.
    digest: str
    # The spec it was built for (one of the specs that share it).
    spec_digest: str | None = None
    state: BuildState | None = None
    reason: str | None = None
    features: list[Feature] = msgspec.field(default_factory=list)
    packages: list[str] = msgspec.field(default_factory=list)
    arch: str = ""
    size_bytes: int | None = None
    created_at_ms: int | None = None


class ImageList(msgspec.Struct, kw_only=True):
    images: list[ImageInfo]


# Named browser states


class SavedState(msgspec.Struct, kw_only=True):
    """A browser state kept under a name: what it holds, never the state itself."""

    name: str
    cookies: int
    origins: int
    saved_at_ms: int
    # The box it was saved from.
    box: str


class StateList(msgspec.Struct, kw_only=True):
    states: list[SavedState]


class StateRemoved(_Response):
    name: str
    removed: bool


# Scheduled work


class ReapResult(_Response):
    removed: int


class PruneReport(msgspec.Struct, kw_only=True):
    frames: int = 0
    entries: int = 0
    boxes: int = 0


PruneResult = PruneReport


class RunResult(_Response):
    ran: int


# Fork


# The most boxes one fork makes (`count`).
MAX_FORK_BRANCHES = 16


class ForkRequest(_Request):
    """`POST …/fork`. A given `placement` replaces the source's completely."""

    mode: Literal["replay", "snapshot"] = "replay"
    up_to: int | None = None
    placement: Placement | None = None
    # Also do again what a person did during a takeover (their `acted` entries).
    include_person: bool = False
    # Beyond the spec: how many boxes replay the same prefix at once (docs/fork.md).
    count: Annotated[int, Meta(ge=1, le=MAX_FORK_BRANCHES)] = 1
    # Beyond the spec: the values of the secrets the source's steps name, over the
    # workspace's; a name with neither refuses the fork (400), naming it.
    secrets: dict[str, str] = msgspec.field(default_factory=dict)


class Skipped(_Response):
    seq: int
    kind: str
    why: str


class ReplayReport(msgspec.Struct, kw_only=True):
    """Every field is always written, so that an empty report (a queued fork) reads as one."""

    attempted: int = 0
    ok: int = 0
    stopped_at: int | None = None
    truncated: bool = False
    skipped: list[Skipped] = msgspec.field(default_factory=list)


class TraceImported(_Response):
    """`POST /v1/traces` (beyond the spec): the new trace's ID (a removed box's, which
    forks), where it came from, and what it holds."""

    trace: str
    source: str
    entries: int
    frames: int


class ForkBranch(_Response):
    """One box of a fork of `count` > 1, and its replay."""

    box: BoxView
    replay: ReplayReport


class ForkResult(_Response):
    """The spec's answer (`box`, `replay`); a fork of `count` > 1 adds `branches`, every
    box it made (the first is `box`), and is absent otherwise (beyond the spec)."""

    box: BoxView
    replay: ReplayReport
    branches: list[ForkBranch] | None = None


class Outcome(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a step did, as a replay compares it: it succeeded or was refused, an exec's
    result, and the window a launch opened."""

    ok: bool
    error: ErrorBody | None = None
    exec: ExecResult | None = None
    window: str | None = None

    @classmethod
    def of(cls, step: StepResult) -> Outcome:
        """The outcome of one step of a batch."""
        if not step.ok:
            return cls(ok=False, error=step.error)
        value = step.value
        return cls(ok=True, exec=value if isinstance(value, ExecResult) else None)


class LooseStep(msgspec.Struct, kw_only=True):
    """A step of a loose replay (`seq` in the run replayed: its trace's seq, or its index in
    a step list) matched to the recorded step `recorded` with the same key. A `mocked` step
    got the recorded outcome; any other ran on a box, or has `outcome: null` when it needed
    one and none was given."""

    seq: int
    kind: str
    # The action's type (a command run alone is an `exec`, a launch a `launch`).
    type: str
    key: str
    recorded: int
    mocked: bool
    outcome: Outcome | None
    # What the recording has for it, beside what the box did (only a step that ran).
    expected: Outcome | None = None


class LooseReport(ReplayReport):
    """`holm replay --loose`: each step of a run matched by key anywhere in a recorded trace.
    `attempted` counts the steps served (mocked or run), `ok` those whose outcome agrees
    with the recording (a step run on a box succeeded, or failed, as the recorded one did)."""

    # The steps of the run replayed, and the box its side-effect free steps ran on.
    steps: int = 0
    box: str | None = None
    matched: list[LooseStep] = msgspec.field(default_factory=list)
    # Steps with no unused recorded step of their key.
    missed: list[StepRef] = msgspec.field(default_factory=list)

    @property
    def needs_box(self) -> list[LooseStep]:
        return [step for step in self.matched if step.outcome is None]

    @property
    def passed(self) -> bool:
        """Every step matched, and was served with the recorded outcome or one that agrees."""
        return not self.missed and not self.needs_box and self.ok == self.attempted


# Viewers and takeover

ViewerMode = Literal["view", "control"]


class TicketRequest(_Request):
    """`POST …/screens/{n}/viewer/ticket`: a ticket for one box's screen; `control` lets
    its viewer send input, `view` only watch."""

    mode: ViewerMode = "view"


class TicketView(_Response):
    ticket: str
    expires_at_ms: int
    # Always in the answer (a default would be left out of it): the viewer page reads it.
    mode: ViewerMode
    # The viewer page with this ticket (the noVNC page served by holmd).
    url: str | None = None


class SocketQuery(_Request):
    """`GET …/viewer/socket` and `GET …/view`: the ticket, and what the viewer asks for
    (`control` needs a control ticket)."""

    ticket: str = ""
    mode: ViewerMode | None = None


class TakeoverRequest(_Request):
    """`POST …/screens/{n}/takeover`."""

    shared: bool = False


class TakeoverView(_Response):
    url: str
    exclusive: bool
    screen: int


class GivenBack(_Response):
    screen: int
    taken_over: bool


class ViewersView(_Response):
    """`GET …/screens/{n}/viewers`: viewers connected now through this server."""

    watching: int
    driving: int
    person_driving: bool
    taken_over: bool


# Workspaces and API keys

# A workspace's name: what `holm key create --workspace NAME` takes.
WorkspaceName = Annotated[
    str,
    Meta(
        pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$",
        description="Lower-case letters, digits, `-` and `_`; 63 at most.",
    ),
]


class CreateWorkspace(_Request):
    """`POST /v1/workspaces`."""

    name: WorkspaceName


class WorkspaceView(_Response):
    # `ws_…`: what a box's `owner` and an event's `owner` say.
    id: str
    name: str
    created_at_ms: int


class WorkspaceList(_Response):
    workspaces: list[WorkspaceView]


# Named secrets (beyond the spec): a workspace's values for `secret: NAME` steps


class PutSecret(_Request):
    value: Annotated[str, Meta(min_length=1, max_length=65_536)]


class SecretView(_Response):
    """A secret as the API shows it: its name and length, never its value."""

    name: str
    bytes: int
    set_at_ms: int


class SecretList(_Response):
    secrets: list[SecretView]


class TraceShredded(_Response):
    """`DELETE …/trace/secrets`: the trace's data key is gone (`shredded`: there was one),
    so what its entries hold sealed under it (a person's typed text) is unreadable for
    good; the entries stay."""

    box: str
    shredded: bool


class CreateKey(_Request):
    """`POST /v1/keys`: a key of the workspace named (by its name or its `ws_…` id)."""

    workspace: Annotated[str, Meta(min_length=1)]


class KeysQuery(_Request):
    """`GET /v1/keys`: one workspace's keys (its name or id), or every key."""

    workspace: str | None = None


class KeyView(_Response):
    """A key as it is kept: never the key itself, which only its creation answers."""

    # `key_…`: what `DELETE /v1/keys/{key}` takes.
    id: str
    workspace: str
    created_at_ms: int


class KeyMade(KeyView, kw_only=True):
    # `holm_sk_…`: shown here once; the server keeps only its SHA-256.
    key: str


class KeyList(_Response):
    keys: list[KeyView]


__all__ = [
    "MAX_FORK_BRANCHES",
    "MAX_SCALE",
    "ActionsRequest",
    "ActionsResult",
    "AddRuntime",
    "BoxList",
    "BoxStateName",
    "BoxView",
    "BuildImage",
    "Catalog",
    "ChangeRuntime",
    "ClipboardPut",
    "ClipboardQuery",
    "CreateBox",
    "CreateKey",
    "CreateWorkspace",
    "Done",
    "ErrorBody",
    "EventsQuery",
    "ForkBranch",
    "ForkOrigin",
    "ForkRequest",
    "ForkResult",
    "FrameQuery",
    "FrameView",
    "GivenBack",
    "Health",
    "Holding",
    "InstallApps",
    "KeyList",
    "KeyMade",
    "KeyView",
    "KeysQuery",
    "LooseReport",
    "LooseStep",
    "Outcome",
    "PathQuery",
    "PoolView",
    "PruneReport",
    "PruneResult",
    "PutSecret",
    "ReapResult",
    "ReplayReport",
    "RunResult",
    "RuntimeList",
    "RuntimeView",
    "SecretList",
    "SecretView",
    "Skipped",
    "SocketQuery",
    "StepResult",
    "StreamQuery",
    "TakeoverRequest",
    "TakeoverView",
    "TicketRequest",
    "TicketView",
    "TraceImported",
    "TraceList",
    "TracePage",
    "TraceQuery",
    "TraceShredded",
    "TraceView",
    "TraceViewQuery",
    "ViewerMode",
    "ViewersView",
    "VncAccess",
    "VncDoorView",
    "WorkspaceList",
    "WorkspaceName",
    "WorkspaceView",
]
