"""`holm trace`: a click group. `holm trace TARGET` prints a trace in the text form of
docs/trace.md, as the JSON lines it is stored as (`--json`), or as figures (`--stats`);
its subcommands list, open, draw and carry traces.

    holm trace BOX_ID                 a box's trace, from the server
    holm trace FILE.jsonl             one trace file, offline
    holm trace DIR                    every trace of a state dir (its traces/) or a folder of
                                      .jsonl files, each after a header line naming it
    holm trace ls [DIR|--url URL]     one line per trace (holm/cli/trace_ls.py)
    holm trace blob REF [DIR]         a blob's or a frame's bytes (holm/cli/trace_blob.py)
    holm trace view BOX_ID|FILE       the trace as one HTML page (--with: another beside it)
    holm trace export|import          a trace as one .holm file (holm/cli/trace_carry.py)

An argument that is an existing file or folder is read offline; anything else is a box ID.
The subcommands' names are words, not box IDs (a folder named so is `./ls`).

What only a box ID, `ls` or `view` needs (pages from a server, box states, the HTML page) is
imported in the branch that does it, so that `holm trace FILE` imports no more than reading
a file takes (tests/cli/test_startup.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, NoReturn

import click
import msgspec

from holm.cli.output import print_figures, write_stdout
from holm.cli.remote import TOKEN_HELP, connected, exit_code, report_error
from holm.cli.trace_blob import read_blob
from holm.cli.trace_carry import register as register_carry
from holm.errors import BadRequest, HolmError, NotFound
from holm.events.codec import CorruptLine, read_envelope
from holm.events.trace_file import read_trace_file, read_trace_lines, trace_files
from holm.projections.stats import TraceStats, trace_stats
from holm.projections.text import INCOMPLETE_LINE, entry_line, pruned_note
from holm.wire.access import state_dir_of
from holm.wire.entries import kind_of

if TYPE_CHECKING:
    from holm.projections.trace_html import TraceSide

# How often `--follow` looks at the file again once it has printed all there is.
FOLLOW_POLL_SECS = 0.2

# What an error of holm itself exits with (docs/cli.md); an error a server would give for
# the same thing (a missing file, one that is not a trace) exits with that error's code.
EXIT_FAILED = 1


# The kinds after which a box's trace has nothing more to follow.
_REMOVALS = frozenset({"gone", "box_deleted"})


class _Page(NamedTuple):
    """What one read of a trace file gives: each whole entry's seq and its printed line,
    the kind of the last (to see a removal), whether a torn line was left out, and where
    the trace begins now (above 0 once its front was pruned)."""

    lines: list[tuple[int, str]]
    last_kind: str | None
    incomplete: bool
    first_seq: int


class _Kind(msgspec.Struct):
    kind: str


_kind_decoder = msgspec.json.Decoder(_Kind)

# The default command: `holm trace TARGET` is `holm trace show TARGET`.
_SHOW = "show"


class TraceGroup(click.Group):
    """`holm trace WORD …` runs the subcommand WORD; `holm trace TARGET …`, with TARGET no
    subcommand's name, shows that trace (the hidden `show`). The first argument that is no
    option (or an option's value) decides, so options may come before it, as before the
    subcommands existed (`holm trace --url URL ls`, `holm trace --json FILE`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or args[0] in ("-h", "--help"):
            return super().parse_args(ctx, args)
        where = self._first_word(args)
        if where is not None and args[where] in self.commands:
            args = [args[where], *args[:where], *args[where + 1 :]]
        else:
            args = [_SHOW, *args]
        return super().parse_args(ctx, args)

    def _first_word(self, args: list[str]) -> int | None:
        # The options of every subcommand that take a value: their value is no word.
        valued = {
            opt
            for command in self.commands.values()
            for param in command.params
            if isinstance(param, click.Option) and not param.is_flag
            for opt in param.opts
        }
        skip = False
        for n, arg in enumerate(args):
            if skip:
                skip = False
            elif arg == "--":
                return n + 1 if n + 1 < len(args) else None
            elif arg.startswith("-") and arg != "-":
                skip = arg in valued
            else:
                return n
        return None


_URL_HELP = (
    "holmd's URL. Default: $HOLM_SERVER_URL, else http://$HOLM_SERVER_ADDR, else "
    "http://127.0.0.1:8080."
)


@click.group("trace", cls=TraceGroup)
def trace() -> None:
    """Print a trace (BOX_ID: a box's, from the server; FILE or DIR: read offline), or
    list, draw, export and import traces.

    `holm trace BOX_ID|FILE|DIR [--after N] [--limit N] [--json] [--stats] [--follow]`
    prints one (`holm trace show --help` tells its options); DIR is a state dir or a folder
    of .jsonl files, each trace printed after a header line.

    Where a command reads from: a BOX_ID always from the server (--url: holmd's URL,
    default $HOLM_SERVER_URL, else http://$HOLM_SERVER_ADDR, else http://127.0.0.1:8080), a
    FILE or DIR always offline. `holm trace ls` with no DIR lists the server's traces when
    one is named (--url, $HOLM_SERVER_URL or $HOLM_SERVER_ADDR), else the state dir's
    ($HOLM_STATE_DIR, else ./var); `holm trace ls DIR` always reads DIR."""


@trace.command(_SHOW, hidden=True)
@click.argument("target", metavar="BOX_ID|FILE|DIR")
@click.option("--after", type=int, help="Only the entries after this seq.")
@click.option(
    "--limit", type=click.IntRange(min=0), help="At most this many entries (of each trace)."
)
@click.option(
    "--json", "as_json", is_flag=True, help="The entries as stored: one JSON line each, for jq."
)
@click.option("--stats", is_flag=True, help="Figures about the trace instead of its entries.")
@click.option(
    "--follow", "-f", is_flag=True, help="Keep printing entries as they land (Ctrl-C stops)."
)
# For tests and scripts: stop following after this many seconds.
@click.option("--follow-timeout", type=float, hidden=True)
@click.option("--token", metavar="TOKEN", help=TOKEN_HELP)
@click.option("--url", "server_url", metavar="URL", help=_URL_HELP + " For a BOX_ID.")
def show(
    target: str,
    after: int | None,
    limit: int | None,
    as_json: bool,
    stats: bool,
    follow: bool,
    follow_timeout: float | None,
    server_url: str | None,
    token: str | None,
) -> None:
    """Print a trace: a box's (BOX_ID, from the server), one trace file, or every trace of a
    folder, read offline. A trace whose writer stopped mid-line ends with a line that says
    it is incomplete."""
    path = Path(target)
    if not path.exists():
        if _looks_like_path(target):
            _exit_with(NotFound(f"no such file or directory: {target}"), as_json)
        # Anything else is a box ID: its trace is read from the server.
        from holm.cli.history import print_server_trace, read_server_trace

        with connected(server_url, token, as_json) as remote:
            if stats:
                entries, incomplete = read_server_trace(remote, target, after=after, limit=limit)
                figures = trace_stats(entries, incomplete=incomplete)
                if as_json:
                    body = {"trace": target, **msgspec.to_builtins(figures)}
                    click.echo(msgspec.json.encode(body).decode())
                else:
                    print_figures(None, _stats_sections(figures))
            else:
                print_server_trace(
                    remote,
                    target,
                    after=after,
                    limit=limit,
                    follow=follow,
                    follow_timeout=follow_timeout,
                )
        return
    if follow and (stats or path.is_dir()):
        raise click.UsageError("--follow reads one trace file, as entries, not figures")
    paths = trace_files(path) if path.is_dir() else [path]
    if not paths:
        _exit_with(NotFound(f"no trace files (*.jsonl) in {target}"), as_json)
    with _offline_errors(as_json):
        if follow:
            _follow(path, after, limit, as_json, follow_timeout)
        elif stats:
            _print_stats(paths, after, limit, as_json, headers=path.is_dir())
        else:
            for n, trace_path in enumerate(paths):
                if path.is_dir() and not as_json:
                    click.echo(("\n" if n else "") + _header(trace_path))
                _print_entries(trace_path, after, limit, as_json)


@trace.command("ls")
@click.argument("folder", metavar="[DIR]", required=False)
@click.option("--json", "as_json", is_flag=True, help="One JSON object a trace, for jq.")
@click.option("--token", metavar="TOKEN", help=TOKEN_HELP)
@click.option("--url", "server_url", metavar="URL", help=_URL_HELP)
def list_traces(
    folder: str | None, as_json: bool, token: str | None, server_url: str | None
) -> None:
    """List traces, one line each: runtime, first and last entry, entries, frames, the
    box's state and origin. DIR (a state dir, or a folder of .jsonl files) is read
    offline; without DIR, the server's traces when a server is named (--url,
    $HOLM_SERVER_URL or $HOLM_SERVER_ADDR), else the state dir's ($HOLM_STATE_DIR, else
    ./var)."""
    from holm.cli.trace_ls import local_traces, print_traces, server_traces

    if folder is not None and server_url is not None:
        raise click.UsageError("`trace ls` reads a DIR or a server (--url), not both")
    if folder is None and (server_url is not None or _server_named(os.environ)):
        with connected(server_url, token, as_json) as remote:
            print_traces(server_traces(remote), as_json)
        return
    path = Path(folder) if folder is not None else state_dir_of(os.environ)
    if not path.is_dir():
        _exit_with(NotFound(f"no such folder: {path} (give DIR, or --url for a server)"), as_json)
    with _offline_errors(as_json):
        print_traces(local_traces(path), as_json)


def _server_named(env: Mapping[str, str]) -> bool:
    """Whether the environment names a server, as every command that talks to one reads
    it (holm/client.py's `server_url`)."""
    return bool(env.get("HOLM_SERVER_URL") or env.get("HOLM_SERVER_ADDR"))


@trace.command("blob")
@click.argument("ref", metavar="sha256:HEX|px:HASH")
@click.argument("folder", metavar="[DIR]", required=False)
@click.option(
    "--out",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The file to write the bytes to (default or -: stdout).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print {ref, bytes, path} (needs --out FILE)."
)
def write_blob(ref: str, folder: str | None, out: Path | None, as_json: bool) -> None:
    """Write the bytes of a blob of a state dir (DIR; default: $HOLM_STATE_DIR, else ./var):
    a value too big for its trace line, which the line names (`sha256:HEX`), or a frame's
    PNG, named by the pixel hash its `frame` entry gives (`px:…`)."""
    with _offline_errors(as_json):
        to_stdout = out is None or str(out) == "-"
        if as_json and to_stdout:
            # The bytes and the JSON cannot share stdout.
            raise BadRequest("--json needs --out FILE: the blob's bytes go there")
        data = read_blob(Path(folder) if folder is not None else state_dir_of(os.environ), ref)
        if out is None or to_stdout:
            write_stdout(data)
        else:
            out.write_bytes(data)
            if as_json:
                click.echo(json.dumps({"ref": ref, "bytes": len(data), "path": str(out)}))


@trace.command("view")
@click.argument("target", metavar="BOX_ID|FILE.jsonl")
@click.option(
    "--out",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The HTML file to write (default: FILE with .html, or BOX_ID.html).",
)
@click.option(
    "--with",
    "beside",
    metavar="SOURCE",
    help="A trace to show beside it, steps aligned as `holm diff` aligns them (a fork's "
    "source): a box ID for a BOX_ID, a trace file for a FILE.",
)
@click.option("--token", metavar="TOKEN", help=TOKEN_HELP)
@click.option("--url", "server_url", metavar="URL", help=_URL_HELP + " For a BOX_ID.")
@click.option("--json", "as_json", is_flag=True, help="Print {path} as JSON.")
def view(
    target: str,
    out: Path | None,
    beside: str | None,
    server_url: str | None,
    token: str | None,
    as_json: bool,
) -> None:
    """Write a trace as one self-contained HTML page and print its path: a trace file's
    (every entry, the frames kept in its state dir inline), or the page the server serves
    for a box. `--with SOURCE` shows SOURCE's trace beside it, aligned step by step."""
    written = _write_view(target, beside, out, server_url, token)
    click.echo(json.dumps({"path": str(written)}) if as_json else str(written))


@contextlib.contextmanager
def _offline_errors(as_json: bool = False) -> Iterator[None]:
    """What reading files offline can meet, as a message (with `as_json`, the error body)
    and the exit code of docs/cli.md."""
    try:
        yield
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as Python's docs advise.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_FAILED)
    except CorruptLine as exc:
        _exit_with(BadRequest(f"not a trace: {exc}"), as_json)
    except HolmError as exc:
        _exit_with(exc, as_json)
    except FileNotFoundError as exc:
        _exit_with(NotFound(str(exc)), as_json)
    except OSError as exc:
        _fail(str(exc))


def _write_view(
    target: str, beside: str | None, out: Path | None, server_url: str | None, token: str | None
) -> Path:
    """The page of a trace file (and a file beside it), or the one the server serves for a
    box (and a box beside it), written to `out`; its path answered."""
    from holm.projections.trace_html import trace_html
    from holm.replay.diff import side_by_side

    path = Path(target)
    if path.exists() or _looks_like_path(target):
        trace = _trace_side(path)
        if beside is None:
            page = trace_html(
                f"Trace {trace.name}", trace.entries, trace.frame_png, incomplete=trace.incomplete
            )
        else:
            import asyncio

            page = asyncio.run(side_by_side(_trace_side(Path(beside)), trace))
        written = out or path.with_suffix(".html")
        written.write_text(page, encoding="utf-8")
    else:
        with connected(server_url, token, False) as remote:
            body = remote.client.trace_view(target, beside=beside)
        written = out or Path(f"{target}.html")
        written.write_bytes(body)
    return written


def _trace_side(path: Path) -> TraceSide:
    """A trace file read whole, named by its stem (a box's ID, in a state dir), its frames
    taken from the state dir beside it: <state>/frames/<trace>/<hash>.png."""
    if not path.is_file():
        _exit_with(NotFound(f"no such trace file: {path}"))
    try:
        read = read_trace_file(path)
    except CorruptLine as exc:
        _exit_with(BadRequest(str(exc)))
    folders = [path.parent.parent / "frames" / path.stem, path.parent / "frames" / path.stem]

    def frame_png(frame_hash: str) -> bytes | None:
        # A frame's name is its hash (`sha256:…`): one harmless path component, no more.
        if not frame_hash or not all(c.isalnum() or c in ":_-" for c in frame_hash):
            return None
        for folder in folders:
            with contextlib.suppress(OSError):
                return (folder / f"{frame_hash}.png").read_bytes()
        return None

    from holm.projections.trace_html import TraceSide

    return TraceSide(path.stem, read.entries, frame_png, read.incomplete)


def _looks_like_path(target: str) -> bool:
    return os.sep in target or target.endswith(".jsonl") or target.startswith((".", "~"))


def _exit_with(error: HolmError, as_json: bool = False) -> NoReturn:
    report_error(error, as_json)
    sys.exit(exit_code(error))


def _fail(message: str) -> NoReturn:
    click.echo(f"holm: {message}", err=True)
    sys.exit(EXIT_FAILED)


def _header(path: Path) -> str:
    return f"# {path.stem} ({path})"


def _read(path: Path, after: int | None, limit: int | None, as_json: bool) -> _Page:
    if as_json:
        return _raw_lines(path, after, limit)
    read = read_trace_file(path, after=after, limit=limit)
    lines = [(entry.seq, entry_line(entry)) for entry in read.entries]
    last_kind = kind_of(read.entries[-1]) if read.entries else None
    return _Page(lines, last_kind, read.incomplete, read.first_seq)


def _raw_lines(path: Path, after: int | None, limit: int | None) -> _Page:
    """The whole lines of a trace file exactly as stored, for `--json`: those the text
    would print, refused as it refuses them (`read_trace_lines`)."""
    read = read_trace_lines(path, after, limit)
    wanted = []
    for line in read.lines:
        envelope = read_envelope(line)
        if envelope is None:
            raise CorruptLine(f"{path}: line {line[:40]!r} is not an entry")
        wanted.append((envelope.seq, line.decode()))
    last_kind = _kind_decoder.decode(wanted[-1][1]).kind if wanted else None
    return _Page(wanted, last_kind, read.incomplete, read.first_seq)


def _print_entries(path: Path, after: int | None, limit: int | None, as_json: bool) -> None:
    page = _read(path, after, limit, as_json)
    note = pruned_note(page.first_seq, page.lines[0][0]) if after is None and page.lines else None
    if note is not None:
        # Read from its start, the trace begins later than seq 0: its front was pruned.
        click.echo(f"holm: {path}: {note}" if as_json else note, err=as_json)
    for _, line in page.lines:
        click.echo(line)
    if page.incomplete:
        if as_json:
            # stdout stays pure JSON lines for jq; the note goes beside it.
            click.echo(f"holm: {path}: {INCOMPLETE_LINE}", err=True)
        else:
            click.echo(INCOMPLETE_LINE)


def _follow(
    path: Path, after: int | None, limit: int | None, as_json: bool, timeout: float | None
) -> None:
    """Print what the file has, then what lands in it, until Ctrl-C, `limit` entries, the
    box's removal or `timeout`. The file is read again whenever it changes (it grows, or is
    cut or replaced by its store): entries are told apart by seq, so none prints twice."""
    deadline = None if timeout is None else time.monotonic() + timeout
    printed, seen = 0, None
    try:
        while limit is None or printed < limit:
            try:
                stat = path.stat()
            except FileNotFoundError:
                _exit_with(NotFound(f"{path} was removed"), as_json)
            if (stat.st_size, stat.st_mtime_ns, stat.st_ino) != seen:
                seen = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
                page = _read(path, after, None if limit is None else limit - printed, as_json)
                for seq, line in page.lines:
                    click.echo(line)
                    after = seq
                printed += len(page.lines)
                if page.last_kind in _REMOVALS:
                    return
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(FOLLOW_POLL_SECS)
    except KeyboardInterrupt:
        return


def _print_stats(
    paths: Iterable[Path], after: int | None, limit: int | None, as_json: bool, headers: bool
) -> None:
    for path in paths:
        read = read_trace_file(path, after=after, limit=limit)
        figures = trace_stats(read.entries, incomplete=read.incomplete)
        if as_json:
            body = {"trace": path.stem, **msgspec.to_builtins(figures)}
            click.echo(msgspec.json.encode(body).decode())
        else:
            print_figures(path.stem if headers else None, _stats_sections(figures))


def _stats_sections(stats: TraceStats) -> list[list[tuple[str, str]]]:
    return [
        list(_summary(stats)),
        [(kind, str(count)) for kind, count in stats.by_kind.items()],
        [(f"by {actor}", str(count)) for actor, count in stats.by_actor.items()],
    ]


def _summary(stats: TraceStats) -> Iterator[tuple[str, str]]:
    yield "entries", str(stats.entries)
    if stats.first_seq is not None:
        yield "seqs", f"{stats.first_seq} to {stats.last_seq}"
    if stats.first_at_ms is not None:
        yield "first at", _when(stats.first_at_ms)
    yield "duration", _duration(stats.duration_ms)
    yield "frames", str(stats.frames)
    yield "failures", str(stats.failures)
    if stats.incomplete:
        yield "incomplete", "yes"


def _when(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(ms: int) -> str:
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(ms // 1000, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


register_carry(trace)

COMMANDS: tuple[click.Command, ...] = (trace,)

__all__ = ["COMMANDS", "TraceGroup", "trace"]
