"""A batch of actions on one screen: each step runs in the box, and its `acted` entry is
queued for the store at once (the next step does not wait for the fsync); the answer waits
until every entry is durable. What the answer adds after the steps (windows, the frame, the
cursor, what stays held down) is read while the last appends are being made durable.
"""

from __future__ import annotations

import asyncio
import base64
import uuid

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
)
from holm.wire.results import (
    ActionResult,
    ExecResult,
    FoundWindow,
    expect,
)
from holm.wire.runtime import BatchEnd, FrameResult, Held
from holm.wire.values import Point, encoding_of

from .guards import boundary
from .journal import Journal, entry


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
) -> ActionsResult:
    """Do the steps of `request` on `screen` and record each; the caller holds the screen."""
    if any(isinstance(action, NOT_IN_BATCH) for action in request.actions):
        # A step is recorded as it was sent: cookie values would be in the trace in clear.
        raise BadRequest(
            "cookies and browser states go through …/cookies and …/state, never in a batch"
        )
    batch = "bat_" + uuid.uuid4().hex[:16]
    results: list[StepResult] = []
    appends: list[asyncio.Future[list[Entry]]] = []
    stopped_at: int | None = None
    ending: asyncio.Future[tuple[BatchEnd, FrameResult | None, Point | None]] | None = None
    try:
        for index, action in enumerate(request.actions):
            value, error = await _step(desktop, screen, action)
            stops = error is not None and not request.keep_going
            if (stops or index == len(request.actions) - 1) and not request.settle_ms:
                # The batch's end (a round trip to the agent, now the longest wait after the
                # last step) is asked before the step's entries go to the store, so that its
                # request goes out first: tasks start in the order they are made.
                ending = asyncio.ensure_future(_after_batch(desktop, screen, request))
            entries = _entries_of(actor, screen, action, value, error, batch, index)
            appends.append(journal.submit(box_id, entries))
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
        if ending is None:
            ending = asyncio.ensure_future(_after_batch(desktop, screen, request))
        await asyncio.gather(ending, *appends, return_exceptions=True)
        raise
    if ending is None:
        if request.settle_ms:
            await asyncio.sleep(request.settle_ms / 1000)
        ending = asyncio.ensure_future(_after_batch(desktop, screen, request))
    # Both are awaited to the end whatever fails, so the entries are durable before any
    # answer, an error included.
    after, appended = await asyncio.gather(
        ending,
        asyncio.gather(*appends),
        return_exceptions=True,
    )
    if isinstance(appended, BaseException):
        raise appended
    if isinstance(after, BaseException):
        raise after
    ended, frame, cursor = after
    released, held = ended.released, ended.held
    return ActionsResult(
        results=results,
        stopped_at=stopped_at,
        windows=ended.windows,
        tabs=ended.tabs,
        released=released.buttons,
        released_keys=released.keys,
        holding=_holding(held.buttons, held),
        holding_keys=_holding(held.keys, held),
        frame=None if frame is None else frame_view(frame),
        cursor=cursor,
    )


def _entries_of(
    actor: Actor,
    screen: int,
    action: Action,
    value: ActionResult | None,
    error: HolmError | None,
    batch: str,
    index: int,
) -> list[Entry]:
    """What one step records: its `acted` entry, and `app_launched` after a launch."""
    # A write's bytes and a clipboard's text are not kept: the path and size, or the
    # selection and length, are (as `PUT …/files` and `PUT …/clipboard` record them).
    kept, size = redacted_action(action)
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
            # What a strict replay compares: an exec's code and output.
            result=msgspec.to_builtins(value) if isinstance(value, ExecResult) else None,
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
    desktop: Desktop, screen: int, action: Action
) -> tuple[ActionResult | None, HolmError | None]:
    try:
        value = await boundary(desktop.act(screen, action), f"a {type_of(action)} step")
    except HolmError as exc:
        return None, exc
    return value, None


async def _after_batch(
    desktop: Desktop, screen: int, request: ActionsRequest
) -> tuple[BatchEnd, FrameResult | None, Point | None]:
    async def nothing() -> None:
        return None

    async def cursor() -> Point:
        return expect(await desktop.act(screen, Cursor()), Point)

    frame = (
        desktop.frame(
            screen,
            have=request.have_frame,
            encoding=encoding_of(request.frame_format, request.frame_quality),
        )
        if "frame" in request.want
        else nothing()
    )
    where = cursor() if "cursor" in request.want else nothing()
    return await boundary(
        asyncio.gather(desktop.end_batch(screen), frame, where),
        "reading the screen after a batch",
    )


def _holding(names: list[str], held: Held) -> list[Holding]:
    return [Holding(name=name, release_at_ms=held.release_at_ms) for name in names]
