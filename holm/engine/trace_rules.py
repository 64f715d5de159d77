"""What an action run on its own (a REST route, an MCP tool, a fork's `executed` step)
leaves in the trace: the spec's recording table (docs/api.md, "What each route records"), as one
pure function. A batch records every step as `acted` instead (engine/batch.py).

Page actions run alone (the `…/page…` and `…/pages…` routes) are not recorded, so a fork
does not do them again; a page screenshot or PDF is the exception, a `page_captured` entry
with its format and size (and the PDF's path in the box), never the picture.
"""

from __future__ import annotations

from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.entries import (
    Acted,
    Actor,
    AppLaunched,
    ClipboardRead,
    ClipboardSet,
    Entry,
    Executed,
    FileRead,
    FileWritten,
    PageCaptured,
    acted_key,
    executed_key,
    launched_key,
)

from .journal import entry


def recorded_alone(
    action: a.Action, result: r.ActionResult, screen: int, actor: Actor
) -> list[Entry]:
    """The entries of `action` done outside a batch; none for a read that is not recorded
    (windows, the pointer, listing and searching files)."""
    match action, result:
        case a.Exec(what=what), r.ExecResult():
            return [
                entry(
                    Executed,
                    actor,
                    argv=what.argv,
                    env=what.env,
                    code=result.code,
                    timed_out=result.timed_out,
                    key=executed_key(what.argv, what.timeout_ms, what.env),
                    timeout_ms=what.timeout_ms,
                    stdout=result.stdout,
                    stderr=result.stderr,
                    truncated=result.truncated,
                )
            ]
        case a.ReadFile(path=path), r.FileData(size=size):
            return [entry(FileRead, actor, path=path, bytes=size)]
        case a.WriteFile(), r.FileSaved(path=path, size=size):
            # The path and size, never the bytes (docs/trace.md).
            return [entry(FileWritten, actor, path=path, bytes=size)]
        case a.Clipboard(selection=selection, text=None), r.ClipboardView(length=length):
            return [entry(ClipboardRead, actor, screen=screen, selection=selection, bytes=length)]
        case a.Clipboard(selection=selection), r.ClipboardView(length=length):
            return [entry(ClipboardSet, actor, screen=screen, selection=selection, bytes=length)]
        case a.PageShot(what=shot), r.PageShotTaken(data_base64=data):
            size = len(data) * 3 // 4 - data[-2:].count("=")
            return [entry(PageCaptured, actor, format=shot.format, bytes=size, screen=screen)]
        case a.PagePdf(what=pdf), r.FileSaved(size=size):
            return [
                entry(PageCaptured, actor, format="pdf", bytes=size, screen=screen, path=pdf.path)
            ]
        case a.Record(what=what), r.Recording() if what.do != "status":
            # Kept as a batch step is (without a batch), so a fork starts and stops its own.
            key = acted_key(screen, action)
            return [entry(Acted, actor, screen=screen, action=action, ok=True, key=key)]
        case a.Launch(app=app, args=args), r.FoundWindow(window=window):
            key = launched_key(screen, app, args)
            return [
                entry(
                    AppLaunched, actor, screen=screen, app=app, key=key, args=args, window=window.id
                )
            ]
    return []
