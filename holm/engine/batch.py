"""A batch of actions on one screen: each step runs in the box, and its `acted` entry is
queued for the store at once (the next step does not wait for the fsync); the answer waits
until every entry is durable. What the answer adds after the steps (windows, the frame, the
cursor, what stays held down) is read while the last appends are being made durable.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, TypeVar

import msgspec

from holm.adapters.base import Desktop
from holm.errors import BadRequest, HolmError
from holm.wire.actions import NOT_IN_BATCH, Action, Cursor, Launch, type_of
from holm.wire.api import ActionsRequest, ActionsResult, FrameView, Holding, StepResult
from holm.wire.entries import (
    Acted,
    Actor,
    AppLaunched,
    Entry,
    acted_key,
    launched_key,
    redacted_action,
    url_without_query,
)
from holm.wire.results import (
    ActionResult,
    ElementDone,
    ExecResult,
    FoundWindow,
    PageOpened,
    expect,
)
from holm.wire.runtime import BatchEnd, FrameResult, Held
from holm.wire.values import Point, encoding_of

from .guards import boundary
from .journal import Journal, entry
from .named_secrets import scrubbed_error, scrubbed_result, secret_bytes, with_values
from .step_frames import StepFrames

T = TypeVar("T")


def frame_view(frame: FrameResult) -> FrameView:
    """The frame as the API answers it: a PNG where the spec has it (`png_base64`), another
    format beside it (`image_base64`)."""
    data = None if frame.image is None else base64.b64encode(frame.image).decode()
    png = frame.format == "png"
    return FrameView(
        hash=frame.hash,
        unchanged=frame.unchanged,
        width=frame.width,
        height=frame.height,
        png_base64=data if png else None,
        format=frame.format,
        image_base64=None if png else data,
    )


async def run_steps(
    journal: Journal,
    desktop: Desktop,
    box_id: str,
    screen: int,
    request: ActionsRequest,
    actor: Actor,
    secrets: Mapping[str, str] | None = None,
    *,
    frames: StepFrames | None = None,
) -> ActionsResult:
    """Do the steps of `request` on `screen` and record each; the caller holds the screen.
    `secrets` has the value of every secret a step names (engine/named_secrets.py): the box
    gets the values, the trace and the answer the names. With `frames`, an input or page
    step whose screen changed since its last frame has that screen recorded right before
    it (step_frames.py)."""
    values = dict(secrets or {})
    if any(isinstance(action, NOT_IN_BATCH) for action in request.actions):
        # A step is recorded as it was sent: cookie values would be in the trace in clear.
        raise BadRequest(
            "cookies and browser states go through …/cookies and …/state, never in a batch"
        )
    batch = "bat_" + uuid.uuid4().hex[:16]
    results: list[StepResult] = []
    appends: list[asyncio.Future[list[Entry]]] = []
    stopped_at: int | None = None
    # The batch's end, once asked; then all that the answer adds after the steps.
    ended: Awaitable[BatchEnd] | None = None
    after: Awaitable[After] | None = None
    last = len(request.actions) - 1
    try:
        for index, action in enumerate(request.actions):
            # The batch's end goes right behind the last step (the box does it after the
            # step), so that its round trip is over by the time the step is durable.
            sent = with_values(action, values) if values else action
            # Asked before the step is sent: the agent reads the screen before doing it.
            looking = (
                None
                if frames is None
                else frames.look(box_id, screen, desktop, action, last_step=index == last)
            )
            value, error, ended = await _step(
                desktop, screen, sent, end=index == last and not request.settle_ms
            )
            if values:
                value = scrubbed_result(value, values.values())
                error = None if error is None else scrubbed_error(error, values.values())
            stops = error is not None and not request.keep_going
            if (stops or index == last) and not request.settle_ms:
                # What the answer adds (the frame, the cursor) is asked before the step's
                # entries go to the store, so that its request goes out first.
                after = _ask_after_batch(desktop, screen, request, ended)
            entries = _entries_of(
                actor, screen, action, value, error, batch, index, secret_bytes(action, values)
            )
            stored_first = None
            if frames is not None and looking is not None:
                found, stored_first = await frames.entries(box_id, screen, desktop, looking)
                entries = found + entries
            appends.append(journal.submit(box_id, entries, stored_first=stored_first))
            results.append(
                StepResult(
                    index=index,
                    type=type_of(action),
                    ok=error is None,
                    error=None if error is None else error.body(),
                    value=value,
                )
            )
            if stops:
                stopped_at = index
                break
    except BaseException:
        # Whatever broke off the steps (an entry that could not be made, a cancelled
        # request): what went down in the batch is still released, and the entries already
        # queued are durable, before the error goes on.
        if after is None:
            after = _ask_after_batch(desktop, screen, request, ended)
        await asyncio.gather(after, *appends, return_exceptions=True)
        raise
    if after is None:
        if request.settle_ms:
            await asyncio.sleep(request.settle_ms / 1000)
        after = _ask_after_batch(desktop, screen, request, ended)
    # Both are awaited to the end whatever fails, so the entries are durable before any
    # answer, an error included; the entries' error is the one told.
    _, failed = await _each(appends)
    try:
        ended_with, frame, cursor = await after
    except Exception as exc:
        raise failed or exc from None
    if failed is not None:
        raise failed
    released, held = ended_with.released, ended_with.held
    return ActionsResult(
        results=results,
        stopped_at=stopped_at,
        windows=ended_with.windows,
        tabs=ended_with.tabs,
        released=released.buttons,
        released_keys=released.keys,
        holding=_holding(held.buttons, held),
        holding_keys=_holding(held.keys, held),
        frame=None if frame is None else frame_view(frame),
        cursor=cursor,
    )


def _kept_result(value: ActionResult | None) -> Any:
    """What of a step's result its `acted` entry keeps: an exec's code and output (which a
    strict replay compares), and the page a page step left (its URL without the query,
    where a sign-in's code or token may ride, and its title), which `holm diff` compares."""
    match value:
        case ExecResult():
            return msgspec.to_builtins(value)
        case PageOpened(url=url, title=title):
            return {"page": {"url": url_without_query(url), "title": title}}
        case ElementDone(url=url):
            return {"page": {"url": url_without_query(url)}}
        case _:
            return None


def _entries_of(
    actor: Actor,
    screen: int,
    action: Action,
    value: ActionResult | None,
    error: HolmError | None,
    batch: str,
    index: int,
    typed_secret: int | None = None,
) -> list[Entry]:
    """What one step records: its `acted` entry, and `app_launched` after a launch."""
    # A write's bytes and a clipboard's text are not kept: the path and size, or the
    # selection and length, are (as `PUT …/files` and `PUT …/clipboard` record them); a
    # step that typed a secret keeps its name, and the length of what it typed.
    kept, size = redacted_action(action)
    if typed_secret is not None:
        size = typed_secret
    entries: list[Entry] = [
        entry(
            Acted,
            actor,
            screen=screen,
            action=kept,
            ok=error is None,
            key=acted_key(screen, kept),
            error=None if error is None else error.body(),
            batch=batch,
            index=index,
            result=_kept_result(value),
            bytes=size,
        )
    ]
    if isinstance(action, Launch) and isinstance(value, FoundWindow):
        entries.append(
            entry(
                AppLaunched,
                actor,
                screen=screen,
                app=action.app,
                key=launched_key(screen, action.app, action.args),
                args=action.args,
                window=value.window.id,
                batch=batch,
            )
        )
    return entries


async def _step(
    desktop: Desktop, screen: int, action: Action, *, end: bool
) -> tuple[ActionResult | None, HolmError | None, Awaitable[BatchEnd] | None]:
    """Do one step; with `end`, ask the batch's end right behind it (the desktop may send
    each request as it is asked: holm/adapters/base.py)."""
    doing = desktop.act(screen, action)
    ended = desktop.end_batch(screen) if end else None
    try:
        value = await boundary(doing, f"a {type_of(action)} step")
    except HolmError as exc:
        return None, exc, ended
    except BaseException:
        # Broken off (a cancelled request): the caller asks the end anew.
        if inspect.iscoroutine(ended):
            ended.close()
        raise
    return value, None, ended


# What a batch's answer adds after its steps: the end, and the frame and the cursor.
After = tuple[BatchEnd, FrameResult | None, Point | None]


def _ask_after_batch(
    desktop: Desktop, screen: int, request: ActionsRequest, ended: Awaitable[BatchEnd] | None
) -> Awaitable[After]:
    """Ask for the batch's end (unless `ended` was asked already) and for the frame and the
    cursor when `want` names them, now; await the answer for all of them."""
    end = desktop.end_batch(screen) if ended is None else ended
    frame = None
    if "frame" in request.want:
        encoding = encoding_of(request.frame_format, request.frame_quality)
        frame = desktop.frame(
            screen, have=request.have_frame, scale=request.frame_scale, encoding=encoding
        )
    cursor = desktop.act(screen, Cursor()) if "cursor" in request.want else None
    return _after_batch(end, frame, cursor)


async def _after_batch(
    end: Awaitable[BatchEnd],
    frame: Awaitable[FrameResult] | None,
    cursor: Awaitable[ActionResult] | None,
) -> After:
    """Each answer awaited, whatever another's fate; the first error is the one told."""
    reading = "reading the screen after a batch"
    got, failed = await _each(
        [
            boundary(end, "releasing what the batch holds"),
            None if frame is None else boundary(frame, reading),
            None if cursor is None else boundary(cursor, reading),
        ]
    )
    if failed is not None:
        raise failed
    ended, seen, where = got
    return (
        expect(ended, BatchEnd),
        None if seen is None else expect(seen, FrameResult),
        None if where is None else expect(where, Point),
    )


async def _each(calls: Sequence[Awaitable[T] | None]) -> tuple[list[T | None], Exception | None]:
    """Each of `calls` awaited in turn, whatever another's fate: their answers (None for a
    call that failed or was not made) and the first error."""
    failed: Exception | None = None
    got: list[T | None] = []
    for call in calls:
        try:
            got.append(None if call is None else await call)
        except Exception as exc:
            got.append(None)
            failed = failed or exc
    return got, failed


def _holding(names: list[str], held: Held) -> list[Holding]:
    return [Holding(name=name, release_at_ms=held.release_at_ms) for name in names]
