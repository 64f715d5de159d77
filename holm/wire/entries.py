"""The entries of a trace: one tagged Struct per `kind`, written as one JSON line each.

Every entry has the envelope `seq` (given by the store on append, contiguous from 0),
`at_ms` (wall clock, milliseconds), `actor` and `kind`; `screen` and `frame` where they
apply. Field names are stable: a written field never changes meaning; old lines are upgraded
while decoding, never rewritten.

Kinds beyond the spec's table, each documented in docs/trace.md:
- `box_ready`: the desktop is up (after create, resume or start); feeds `box.ready`.
- `box_failed`: a queued create did not start; feeds `box.failed`.
- `box_unreachable`: the box's runtime cannot be reached (until a later `box_ready`,
  `box_paused` or `box_stopped`); feeds `box.unreachable`.
- `browser_restarted`: a screen's Chromium ended and was started again (or could not be).
- `image_built`, `image_removed`: written to the server-level trace (`SERVER_TRACE`),
  not to a box's; feed `image.built` and `image.removed`.
- `runtime_added`, `runtime_changed`, `runtime_removed`: a remote runtime of the vendor API,
  in the server-level trace, its secrets sealed (holm/secrets_box.py); feed `runtime.added`,
  `runtime.changed` and `runtime.removed`.
- `pool_failing`, `pool_recovered`: the warm pool's spares of a spec stopped starting (it
  backs off), or started again; in the server-level trace; feed `pool.failing` and
  `pool.recovered`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import msgspec

from holm.errors import ErrorBody
from holm.wire.actions import Action, Clipboard, SecretRef, WriteFile, WriteWhat
from holm.wire.spec import Placement, Spec, canonical_json

Actor = Literal["agent", "person", "system"]

# The trace that holds server-level facts (images built and removed), beside the boxes'.
SERVER_TRACE = "server"
# The most entries one page of a trace holds (docs/trace.md).
PAGE_MAX = 500


class _Entry(msgspec.Struct, tag_field="kind"):
    """The envelope. Every field is written on every line (no omitted defaults), so that
    `jq .actor` never meets a missing key. Unknown fields are tolerated on decode so that a
    newer writer's lines stay readable."""

    seq: int
    at_ms: int
    actor: Actor


# Lifecycle


class BoxCreated(_Entry, tag="box_created"):
    box_id: str
    runtime: str
    spec: Spec
    placement: Placement
    spec_digest: str
    expires_at_ms: int
    owner: str | None = None


class ForkedFrom(_Entry, tag="forked_from"):
    source: str
    up_to: int | None = None


class Imported(_Entry, tag="imported"):
    """The trace came from a `.holm` file (holm/wire/archive.py): the trace it was exported
    as, how many entries the file held, and when it was exported and imported. It follows
    the `box_created` of the imported trace, as `forked_from` follows a fork's."""

    source: str
    entries: int
    exported_at_ms: int
    imported_at_ms: int


class Adopted(_Entry, tag="adopted"):
    box_id: str
    runtime: str
    # Set when the adopting server had no record of the box (the store lost it).
    spec: Spec | None = None
    placement: Placement | None = None
    spec_digest: str | None = None
    expires_at_ms: int | None = None
    owner: str | None = None


class BoxReady(_Entry, tag="box_ready"):
    viewer_urls: list[str] = msgspec.field(default_factory=list)
    devtools_url: str | None = None


class BoxFailed(_Entry, tag="box_failed"):
    why: str


class BoxUnreachable(_Entry, tag="box_unreachable"):
    reason: str


class BoxPaused(_Entry, tag="box_paused"):
    pass


class BoxResumed(_Entry, tag="box_resumed"):
    pass


class BoxStopped(_Entry, tag="box_stopped"):
    pass


class BoxStarted(_Entry, tag="box_started"):
    pass


class BoxGone(_Entry, tag="gone"):
    reason: str


class BoxDeleted(_Entry, tag="box_deleted"):
    pass


# What was done in the box


class Acted(_Entry, tag="acted"):
    screen: int
    action: Action
    ok: bool
    key: str
    error: ErrorBody | None = None
    batch: str | None = None
    index: int = 0
    # A JSON value a strict replay compares: an exec step's result (`ExecResult`).
    result: Any = None
    # Set on a `write_file` step (the file's size) and a clipboard set (the text's length
    # in UTF-8 bytes), whose `action` was recorded without its bytes or text
    # (`redacted_action`); None on every other step and on lines written before it.
    bytes: int | None = None
    # A person's `type`: its text sealed under the trace's own data key (URL-safe base64;
    # engine/person_text.py), the action's `text` left "". None on every other step.
    sealed: str | None = None


class FrameSeen(_Entry, tag="frame"):
    screen: int
    frame: str
    width: int
    height: int


class Executed(_Entry, tag="executed"):
    # Secrets by name (`{"secret": NAME}`), never their values.
    argv: list[str | SecretRef]
    code: int | None
    timed_out: bool
    key: str
    timeout_ms: int = 10_000
    stdout: Any = ""
    stderr: Any = ""
    truncated: bool = False
    env: dict[str, str | SecretRef] = msgspec.field(default_factory=dict)


class AppLaunched(_Entry, tag="app_launched"):
    screen: int
    app: str
    key: str
    args: list[str] = msgspec.field(default_factory=list)
    window: str | None = None
    # Set when the launch was a step of a batch, which also has its `acted` entry: a fork
    # does that step once, through the `acted` entry.
    batch: str | None = None


class BrowserRestarted(_Entry, tag="browser_restarted"):
    """A screen's Chromium ended (its last window closed, or it crashed) and the agent
    started it again, with its profile, on a blank page; `why` says how it ended. With
    `failure`, it could not be started again, and says why. A fork does nothing for it:
    what ended the browser is a step of its own, or was not the fork's."""

    screen: int
    why: str
    failure: str | None = None


class AppsInstalled(_Entry, tag="apps_installed"):
    apps: list[str]


class FileWritten(_Entry, tag="file_written"):
    path: str
    bytes: int


class FileRead(_Entry, tag="file_read"):
    path: str
    bytes: int


class ClipboardSet(_Entry, tag="clipboard_set"):
    screen: int
    selection: str
    bytes: int


class ClipboardRead(_Entry, tag="clipboard_read"):
    screen: int
    selection: str
    bytes: int


class PageCaptured(_Entry, tag="page_captured"):
    format: str
    bytes: int
    screen: int | None = None
    path: str | None = None


class TakeoverStarted(_Entry, tag="takeover_started"):
    screen: int
    shared: bool = False


class TakeoverEnded(_Entry, tag="takeover_ended"):
    screen: int


# Server-level (SERVER_TRACE)


class ImageBuilt(_Entry, tag="image_built"):
    runtime: str
    image: str
    spec_digest: str


class ImageRemoved(_Entry, tag="image_removed"):
    runtime: str
    image: str
    spec_digest: str


# Remote runtimes (the vendor API): in the server-level trace, so that every server that
# reads the store has them. The last of a name's entries is what it is.


class RuntimeAdded(_Entry, tag="runtime_added"):
    """A runtime added with `POST /v1/runtimes`: the provider, its fields as given, the
    names of its secrets, and the secrets themselves only sealed (`sealed`: URL-safe base64
    of `SecretsBox.seal` of their JSON, bound to `runtime:<name>`), never in clear."""

    name: str
    provider: str
    fields: dict[str, Any] = msgspec.field(default_factory=dict)
    secret_names: list[str] = msgspec.field(default_factory=list)
    sealed: str = ""


class RuntimeChanged(RuntimeAdded, tag="runtime_changed"):
    """The whole runtime again after `PATCH /v1/runtimes/{name}` (fields merged, secrets
    sealed anew)."""


class RuntimeRemoved(_Entry, tag="runtime_removed"):
    name: str


class SecretSet(_Entry, tag="secret_set"):
    """A workspace's named secret set with `PUT /v1/secrets/{name}` (beyond the spec), on
    the server's trace: its length, and the value only sealed (URL-safe base64 of
    `SecretsBox.seal`, bound to `secret:<workspace>:<name>`), never in clear."""

    workspace: str
    name: str
    bytes: int
    sealed: str


class SecretRemoved(_Entry, tag="secret_removed"):
    workspace: str
    name: str


class PoolFailing(_Entry, tag="pool_failing"):
    """A spare of the warm pool did not start, the first of a run of failures: the pool
    tries again at `retry_at_ms`, each time later (docs/server.md, "The warm pool")."""

    runtime: str
    spec_digest: str
    why: str
    retry_at_ms: int


class PoolRecovered(_Entry, tag="pool_recovered"):
    """A spare started after a `pool_failing`."""

    runtime: str
    spec_digest: str


Entry = (
    BoxCreated
    | ForkedFrom
    | Imported
    | Adopted
    | BoxReady
    | BoxFailed
    | BoxUnreachable
    | BoxPaused
    | BoxResumed
    | BoxStopped
    | BoxStarted
    | BoxGone
    | BoxDeleted
    | Acted
    | FrameSeen
    | Executed
    | AppLaunched
    | BrowserRestarted
    | AppsInstalled
    | FileWritten
    | FileRead
    | ClipboardSet
    | ClipboardRead
    | PageCaptured
    | TakeoverStarted
    | TakeoverEnded
    | ImageBuilt
    | ImageRemoved
    | RuntimeAdded
    | RuntimeChanged
    | RuntimeRemoved
    | SecretSet
    | SecretRemoved
    | PoolFailing
    | PoolRecovered
)

KINDS: tuple[str, ...] = tuple(str(cls.__struct_config__.tag) for cls in Entry.__args__)


def step_key(kind: str, canonical_input: object) -> str:
    """The identity of a replayable step: sha256 over its kind and canonical input (sorted
    keys), as a loose replay matches steps by it."""
    digest = hashlib.sha256(kind.encode() + b"\n" + canonical_json(canonical_input))
    return "sha256:" + digest.hexdigest()


def acted_key(screen: int, action: Action) -> str:
    return step_key("acted", {"screen": screen, "action": action})


def launched_key(screen: int, app: str, args: list[str]) -> str:
    return step_key("app_launched", {"screen": screen, "app": app, "args": args})


def executed_key(
    argv: list[str | SecretRef], timeout_ms: int, env: dict[str, str | SecretRef] | None = None
) -> str:
    # Without env as before it, so the keys of old traces stay what they were.
    parts: dict[str, Any] = {"argv": argv, "timeout_ms": timeout_ms}
    if env:
        parts["env"] = env
    return step_key("executed", parts)


def url_without_query(url: str) -> str:
    """A page's URL as a trace keeps it beside a step: its query, where a sign-in's code or
    a token may ride, replaced by `?…`; the rest as it was."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    return urlunsplit(parts._replace(query="…"))


def redacted_action(action: Action) -> tuple[Action, int | None]:
    """The action as an `acted` entry keeps it, and the size of what was left out: a
    `write_file` loses its contents (`contents_base64` becomes "") and a clipboard set its
    text (`text` becomes ""), as the trace never keeps the bytes of a write or a clipboard
    change (docs/trace.md). Any other action is kept whole, with None."""
    match action:
        case WriteFile(what=what):
            try:
                size = len(base64.b64decode(what.contents_base64, validate=True))
            except (binascii.Error, ValueError):
                size = len(what.contents_base64) * 3 // 4
            return WriteFile(what=WriteWhat(path=what.path, contents_base64="")), size
        case Clipboard(text=str() as text, selection=selection):
            return Clipboard(selection=selection, text=""), len(text.encode())
    return action, None


def redacts(action: Action) -> bool:
    """Whether an `acted` entry of this action leaves its bytes out: a fork skips it."""
    return isinstance(action, WriteFile) or (
        isinstance(action, Clipboard) and action.text is not None
    )


def kind_of(entry: Entry) -> str:
    """An entry's `kind`, as written on its line."""
    return str(type(entry).__struct_config__.tag)


__all__ = [
    "KINDS",
    "PAGE_MAX",
    "SERVER_TRACE",
    "Acted",
    "Actor",
    "Adopted",
    "AppLaunched",
    "AppsInstalled",
    "BoxCreated",
    "BoxDeleted",
    "BoxFailed",
    "BoxGone",
    "BoxPaused",
    "BoxReady",
    "BoxResumed",
    "BoxStarted",
    "BoxStopped",
    "BoxUnreachable",
    "BrowserRestarted",
    "ClipboardRead",
    "ClipboardSet",
    "Entry",
    "Executed",
    "FileRead",
    "FileWritten",
    "ForkedFrom",
    "FrameSeen",
    "ImageBuilt",
    "ImageRemoved",
    "Imported",
    "PageCaptured",
    "PoolFailing",
    "PoolRecovered",
    "RuntimeAdded",
    "RuntimeChanged",
    "RuntimeRemoved",
    "SecretRemoved",
    "SecretSet",
    "TakeoverEnded",
    "TakeoverStarted",
    "acted_key",
    "executed_key",
    "kind_of",
    "launched_key",
    "redacted_action",
    "redacts",
    "step_key",
    "url_without_query",
]
