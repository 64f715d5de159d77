"""The trace as text, one line an entry, in the form of `holm trace`:

       0  agent    created 1280x800
       1  agent    screen 0  open_url https://example.com
       2  agent    screen 0  the screen changed
       3  agent    screen 0 handed to a person

`f"{seq:>4}  {actor:<8} {text}"`. What happened on one screen starts `screen N` and two
spaces; a change of who has the screen reads as a sentence, with one. Every form is listed
in docs/trace.md. Rendering never fails: a value that would break the line (a newline in a
typed text, a long URL) is escaped and clipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import msgspec

from holm.wire import actions as a
from holm.wire.entries import (
    Acted,
    Adopted,
    AppLaunched,
    AppsInstalled,
    BoxCreated,
    BoxDeleted,
    BoxFailed,
    BoxGone,
    BoxPaused,
    BoxReady,
    BoxResumed,
    BoxStarted,
    BoxStopped,
    BoxUnreachable,
    BrowserRestarted,
    ClipboardRead,
    ClipboardSet,
    Entry,
    Executed,
    FileRead,
    FileWritten,
    ForkedFrom,
    FrameSeen,
    ImageBuilt,
    ImageRemoved,
    Imported,
    PageCaptured,
    PoolFailing,
    PoolRecovered,
    RuntimeAdded,
    RuntimeChanged,
    RuntimeRemoved,
    SecretRemoved,
    SecretSet,
    TakeoverEnded,
    TakeoverStarted,
)
from holm.wire.keys import as_list, split_chord
from holm.wire.spec import DEFAULT_HEIGHT, DEFAULT_WIDTH
from holm.wire.values import Modifier, Point

INCOMPLETE_LINE = "incomplete: the trace ends in a torn line (its writer stopped mid-entry)"

# How much of a free text a line shows: a step's hint (URL, typed text, command), and a
# reason or error message, which says more and is what a reader came for.
CLIP = 60
CLIP_REASON = 120


def pruned_line(first_seq: int, kept_before: bool = False) -> str:
    """The line a trace read from its start begins with when its front was dropped (the
    memory store keeps a trace's last 10,000 entries; `HOLM_KEEP_ENTRIES_SECS` prunes old
    entries but for those its box's state is folded from, `kept_before`): where it begins
    now."""
    if kept_before:
        return (
            f"pruned: the trace begins at seq {first_seq}; of the {first_seq} entries before"
            " it, only those its box's state is folded from were kept"
        )
    return (
        f"pruned: the trace begins at seq {first_seq}; the {first_seq} entries before it"
        " were dropped"
    )


def pruned_note(first_seq: int, first_read: int) -> str | None:
    """The `pruned_line` of a trace read from its start, whose store says it begins at
    `first_seq` (`TraceInfo.first_seq`) and whose first entry read is `first_read`; None
    when nothing was pruned."""
    begins = max(first_seq, first_read)
    return pruned_line(begins, kept_before=first_read < begins) if begins > 0 else None


def entry_line(entry: Entry) -> str:
    return f"{entry.seq:>4}  {entry.actor:<8} {entry_text(entry)}"


def render_lines(
    entries: Iterable[Entry], incomplete: bool = False, first_seq: int = 0, from_start: bool = True
) -> Iterator[str]:
    """The lines of a trace from its start; one whose front was pruned begins with a line
    that says where it begins (`pruned_note`: `first_seq` is the store's), and one whose
    writer stopped mid-line ends with a line that says it is incomplete, after every whole
    entry. Not `from_start` (a page read after a seq), nothing before it is said pruned:
    the entries before it were on the pages before."""
    first = from_start
    for entry in entries:
        note = pruned_note(first_seq, entry.seq) if first else None
        if note is not None:
            yield note
        first = False
        yield entry_line(entry)
    if incomplete:
        yield INCOMPLETE_LINE


def entry_text(entry: Entry) -> str:
    match entry:
        case Acted(screen=screen, action=a.Type(text="", secret=None), bytes=int(size)):
            # A person's text, sealed or not kept (docs/trace.md): shown as dots.
            return f"screen {screen}  type {SEALED} ({_bytes(size)})"
        case Acted(screen=screen, action=action, ok=ok, error=error, result=result):
            text = f"screen {screen}  {action_text(action)}"
            if ok and isinstance(action, a.Exec) and isinstance(result, dict):
                return f"{text} → {_outcome(result.get('code'), result.get('timed_out'))}"
            if ok:
                return text
            why = _clip(error.message, CLIP_REASON) if error else "no reason given"
            return f"{text} failed: {why}"
        case FrameSeen(screen=screen):
            return f"screen {screen}  the screen changed"
        case Executed(argv=argv, code=code, timed_out=timed_out):
            return f"ran {_command(argv)} → {_outcome(code, timed_out)}"
        case TakeoverStarted(screen=screen, shared=shared):
            return f"screen {screen} handed to a person" + (" (shared)" if shared else "")
        case TakeoverEnded(screen=screen):
            return f"screen {screen} taken back"
        case BoxCreated(spec=spec):
            width = spec.desktop.width or DEFAULT_WIDTH
            height = spec.desktop.height or DEFAULT_HEIGHT
            screens = spec.desktop.screens
            return f"created {width}x{height}" + (f", {screens} screens" if screens != 1 else "")
        case ForkedFrom(source=source, up_to=up_to):
            return f"forked from {_clip(source)}" + (f" up to {up_to}" if up_to is not None else "")
        case Imported(source=source, entries=count):
            return f"imported from {_clip(source)} ({count} entries)"
        case Adopted():
            return "adopted"
        case BoxReady():
            return "ready"
        case BoxPaused():
            return "paused"
        case BoxResumed():
            return "resumed"
        case BoxStopped():
            return "stopped"
        case BoxStarted():
            return "started"
        case BoxFailed(why=why):
            return f"failed: {_clip(why, CLIP_REASON)}"
        case BoxUnreachable(reason=reason):
            return f"unreachable: {_clip(reason, CLIP_REASON)}"
        case BoxGone(reason=reason):
            return f"removed: {_clip(reason, CLIP_REASON)}"
        case BoxDeleted():
            return "deleted"
        case AppLaunched(screen=screen, app=app, window=window):
            return f"screen {screen}  launched {_clip(app)}" + (
                f" (window {_clip(window)})" if window else ""
            )
        case BrowserRestarted(screen=screen, why=why, failure=None):
            return f"screen {screen}  the browser started again: {_clip(why, CLIP_REASON)}"
        case BrowserRestarted(screen=screen, failure=str(failure)):
            return (
                f"screen {screen}  the browser did not start again: {_clip(failure, CLIP_REASON)}"
            )
        case AppsInstalled(apps=apps):
            return f"installed {_clip(', '.join(apps))}"
        case FileWritten(path=path, bytes=size):
            return f"wrote {_clip(path)} ({_bytes(size)})"
        case FileRead(path=path, bytes=size):
            return f"read {_clip(path)} ({_bytes(size)})"
        case ClipboardSet(screen=screen, selection=selection, bytes=size):
            return f"screen {screen}  set the {_selection(selection)} ({_bytes(size)})"
        case ClipboardRead(screen=screen, selection=selection, bytes=size):
            return f"screen {screen}  read the {_selection(selection)} ({_bytes(size)})"
        case PageCaptured(format=format_, bytes=size, screen=screen, path=path):
            where = f" to {_clip(path)}" if path else ""
            text = f"captured the page as {_clip(format_)}{where} ({_bytes(size)})"
            return f"screen {screen}  {text}" if screen is not None else text
        case RuntimeChanged(name=name, provider=provider):
            return f"changed runtime {_clip(name)} ({_clip(provider)})"
        case RuntimeAdded(name=name, provider=provider):
            return f"added runtime {_clip(name)} ({_clip(provider)})"
        case SecretSet(workspace=workspace, name=name, bytes=size):
            return (
                f"set secret {_clip(name)} of {_clip(workspace) or 'the server'} ({_bytes(size)})"
            )
        case SecretRemoved(workspace=workspace, name=name):
            return f"removed secret {_clip(name)} of {_clip(workspace) or 'the server'}"
        case RuntimeRemoved(name=name):
            return f"removed runtime {_clip(name)}"
        case ImageBuilt(runtime=runtime, image=image):
            return f"built image {_clip(image)} on {_clip(runtime)}"
        case ImageRemoved(runtime=runtime, image=image):
            return f"removed image {_clip(image)} from {_clip(runtime)}"
        case PoolFailing(runtime=runtime, spec_digest=digest, why=why):
            spares = f"spares of {_clip(digest[:19])} on {_clip(runtime)}"
            return f"{spares} do not start: {_clip(why)}"
        case PoolRecovered(runtime=runtime, spec_digest=digest):
            return f"spares of {_clip(digest[:19])} on {_clip(runtime)} start again"
        case _:
            return f"{_clip(type(entry).__name__)}"


def action_text(action: a.Action) -> str:
    """The action's type and a short hint of what it did."""
    hint = _action_hint(action)
    tag = a.type_of(action)
    return f"{tag} {hint}" if hint else tag


def _action_hint(action: a.Action) -> str:
    match action:
        case a.Click(at=at, button=button, held=held, count=count):
            times = f"×{count}" if count > 1 else ""
            return _words(_point(at), _button(button), times, _held(held))
        case a.DoubleClick(at=at, button=button, held=held):
            return _words(_point(at), _button(button), _held(held))
        case a.MouseDown(at=at) | a.MouseUp(at=at):
            return _words(_point(at), _button(action.button))
        case a.Move(to=to):
            return _point(to)
        case a.Drag(from_=start, to=end, button=button, held=held):
            return _words(
                f"{_point(start) or 'pointer'} → {_point(end)}", _button(button), _held(held)
            )
        case a.Path(through=through):
            return f"through {len(through)} points"
        case a.Scroll(at=at, dx=dx, dy=dy, dx_px=px, dy_px=py, held=held):
            return _words(
                _point(at),
                f"dx={dx}" if dx else "",
                f"dy={dy}" if dy else "",
                f"dx={px}px" if px else "",
                f"dy={py}px" if py else "",
                _held(held),
            )
        case a.Type(secret=str() as secret):
            return f"secret {secret}"
        case a.Type(text=text):
            return _quoted(text)
        case a.Press(chord=chord, then=then, held=held):
            keys = [k for item in as_list(chord) for k in split_chord(item)]
            return _clip(_words("+".join(keys), *as_list(then), _held(held)))
        case a.KeyDown(key=key) | a.KeyUp(key=key):
            return _clip("+".join(as_list(key)))
        case a.Wait(ms=ms):
            return f"{ms} ms"
        case a.AwaitWindow(what=what):
            return _clip(what.class_ or what.title or "")
        case a.OnWindow(window=window, what=what):
            return f"{_clip(window)} {what.do}"
        case a.Launch(app=app, args=args):
            return _command([app, *args])
        case a.Record(what=what):
            return what.do
        case a.Clipboard(selection=selection, text=text):
            # The text itself stays out of the line, as the trace keeps no clipboard text.
            verb = "read" if text is None else "set"
            return verb if selection == "clipboard" else f"{verb} {selection}"
        case a.OpenUrl(url=url, label=label):
            return _clip(url) + (f" as {_clip(label)}" if label else "")
        case a.OnTab(tab=tab, close=close):
            return _clip(tab) + (" close" if close else "")
        case a.OnPage(what=op) | a.OnNode(what=op):
            return _operation(msgspec.to_builtins(op))
        case a.Look(what=look):
            return _quoted(look.query)
        case a.Evaluate(what=what):
            return _clip(what.expression)
        case a.Dialog(accept=accept):
            return "accept" if accept else "dismiss"
        case a.Exec(what=what):
            return _command(what.argv)
        case a.ReadFile(path=path) | a.ListFiles(path=path):
            return _clip(path)
        case a.WriteFile(what=what):
            return _clip(what.path)
        case a.Grep(what=what) | a.Glob(what=what):
            return f"{_quoted(what.pattern)} in {_clip(what.path)}"
        case _:
            return ""


def _operation(what: dict[str, Any]) -> str:
    """An element or widget operation: its `op` and what it looks for."""
    op = what.get("op")
    target = what.get("query", what.get("node"))
    if isinstance(target, dict):
        # A widget's query, or the path it was found at.
        target = target.get("query") or target.get("path")
    return _words(
        _clip(str(op)) if op is not None else "",
        _quoted(target) if target else "",
        _clip(str(what["go"])) if "go" in what else "",
    )


def _outcome(code: object, timed_out: object) -> str:
    """How a command ended: its exit code, or why it has none."""
    if timed_out is True:
        return "timed out"
    return _clip(str(code)) if code is not None else "no exit code"


def _point(point: Point | None) -> str:
    return f"{point.x},{point.y}" if point is not None else ""


def _button(button: str) -> str:
    return "" if button == "left" else button


def _held(held: list[Modifier]) -> str:
    return f"with {'+'.join(held)}" if held else ""


# What a person's typed text shows as: the trace keeps it sealed, or not at all.
SEALED = "•••"


def _words(*words: str) -> str:
    return " ".join(word for word in words if word)


def _command(argv: Sequence[str | a.SecretRef]) -> str:
    """A command as a person would type it: an argument with spaces or quotes in double
    quotes (easier to read than a shell's exact quoting, which is not the point here), a
    secret by its name."""
    return _clip(" ".join(_argument(arg) for arg in argv))


def _argument(arg: str | a.SecretRef) -> str:
    if isinstance(arg, a.SecretRef):
        return f"<secret {arg.secret}>"
    if arg and not any(c.isspace() or c in "\"'\\" for c in arg):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _selection(selection: str) -> str:
    return "clipboard" if selection == "clipboard" else f"{_clip(selection)} selection"


def _bytes(size: int) -> str:
    return "1 byte" if size == 1 else f"{size} bytes"


def _quoted(value: object) -> str:
    if value is None:
        return ""
    return '"' + _clip(str(value)).replace('"', '\\"') + '"'


def _clip(text: str, most: int = CLIP) -> str:
    """One line of at most `most` characters: control characters (a newline in a typed
    text) are escaped, so that an entry stays one line."""
    text = "".join(c if c.isprintable() else _escape(c) for c in text)
    return text if len(text) <= most else text[: most - 1] + "…"


def _escape(char: str) -> str:
    named = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
    return named.get(char, f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


__all__ = ["CLIP", "INCOMPLETE_LINE", "action_text", "entry_line", "entry_text", "render_lines"]
