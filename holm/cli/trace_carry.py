"""`holm trace export` and `holm trace import`: a trace as one `.holm` file
(holm/wire/archive.py), to take a run from one holmd to another, or to ship a golden run as
one file; and the same run as a script: a pytest file that strict-replays it, or its page
steps as a Playwright script (holm/cli/trace_scripts.py)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
import msgspec

from holm.cli.remote import TOKEN_HELP, Remote, connected
from holm.errors import BadRequest, NotFound
from holm.events.codec import CorruptLine, blob_refs
from holm.events.trace_file import BLOBS_DIR, FRAMES_DIR, read_trace_lines
from holm.wire.entries import Entry, FrameSeen

if TYPE_CHECKING:
    from holm.wire.archive import Archive

_encoder = msgspec.json.Encoder()
_URL_HELP = (
    "holmd's URL, for a BOX_ID. Default: $HOLM_SERVER_URL, else http://$HOLM_SERVER_ADDR, "
    "else http://127.0.0.1:8080."
)


def archive_of_box(remote: Remote, box_id: str) -> Archive:
    """A box's trace as the server gives it (values whole: it names no blob) and every
    frame it names that the server still keeps."""
    from holm.cli.history import read_server_trace

    entries, _ = read_server_trace(remote, box_id, after=None, limit=None)
    if not entries:
        raise NotFound(f"box {box_id} has no trace")
    frames: dict[str, bytes] = {}
    missing: list[str] = []
    for frame_hash in _frame_hashes(entries):
        try:
            frames[frame_hash] = remote.client.trace_frame(box_id, frame_hash)
        except NotFound:
            missing.append(frame_hash)
    return _archive(box_id, [_encoder.encode(e) for e in entries], frames, {}, missing)


def archive_of_file(path: Path) -> Archive:
    """A trace file of a state dir, its lines as stored (blob references kept), with the
    blobs they name and the frames its `frame` entries name, from the state dir beside it
    (or a `frames/` and `blobs/` folder beside the file)."""
    from holm.events.codec import decode_line

    read = read_trace_lines(path)
    if not read.lines:
        raise BadRequest(f"{path} is not a trace: it has no entries")
    roots = [path.parent.parent, path.parent]
    blobs: dict[str, bytes] = {}
    for ref in sorted({ref for line in read.lines for ref in blob_refs(line)}):
        data = _first_file([root / BLOBS_DIR / ref[7:9] / ref[7:] for root in roots])
        if data is None:
            raise NotFound(f"{path} names blob {ref}, which is not kept beside it")
        blobs[ref] = data
    frames: dict[str, bytes] = {}
    missing: list[str] = []
    # Spilled values (a long argv, an output) are read back from the blobs just gathered.
    entries = [decode_line(line, _Blobs(blobs)) for line in read.lines]
    for frame_hash in _frame_hashes(entries):
        png = _first_file([root / FRAMES_DIR / path.stem / f"{frame_hash}.png" for root in roots])
        if png is None:
            missing.append(frame_hash)
        else:
            frames[frame_hash] = png
    return _archive(path.stem, list(read.lines), frames, blobs, missing)


class _Blobs:
    def __init__(self, blobs: dict[str, bytes]) -> None:
        self.blobs = blobs

    def get(self, ref: str) -> bytes | None:
        return self.blobs.get(ref)


def _archive(
    trace: str,
    lines: list[bytes],
    frames: dict[str, bytes],
    blobs: dict[str, bytes],
    missing: list[str],
) -> Archive:
    # The zip code is loaded by export and import alone, not by every `holm trace`.
    from holm.wire.archive import Archive, Manifest

    manifest = Manifest(
        trace=trace,
        entries=len(lines),
        frames=sorted(frames),
        blobs=sorted(blobs),
        exported_at_ms=int(time.time() * 1000),
        missing_frames=missing,
    )
    return Archive(manifest=manifest, lines=lines, frames=frames, blobs=blobs)


def _frame_hashes(entries: list[Entry]) -> list[str]:
    return sorted({e.frame for e in entries if isinstance(e, FrameSeen)})


def _first_file(paths: list[Path]) -> bytes | None:
    for path in paths:
        with contextlib.suppress(OSError):
            return path.read_bytes()
    return None


def export_trace(
    target: str,
    out: Path | None,
    as_: str,
    server_url: str | None,
    token: str | None,
    as_json: bool,
) -> None:
    from holm.cli.trace_scripts import playwright_script, pytest_file
    from holm.wire.archive import pack

    path = Path(target)
    with connected(server_url, token, as_json) as remote:
        try:
            archive = archive_of_file(path) if path.is_file() else archive_of_box(remote, target)
        except CorruptLine as exc:
            raise BadRequest(f"{target} is not a trace: {exc}") from exc
        name = archive.manifest.trace
        match as_:
            case "holm":
                written = out or Path(f"{name}.holm")
                written.write_bytes(pack(archive))
            case "pytest":
                written = out or Path(f"test_{name}.py")
                holm_file = written.with_suffix(".holm")
                holm_file.write_bytes(pack(archive))
                written.write_text(pytest_file(holm_file.name, archive), encoding="utf-8")
            case _:
                written = out or Path(f"{name}_playwright.py")
                written.write_text(playwright_script(archive), encoding="utf-8")
    click.echo(str(written))
    if archive.manifest.missing_frames:
        count = len(archive.manifest.missing_frames)
        click.echo(f"holm: {count} frames the trace names are no longer kept", err=True)


def import_trace(source: Path, server_url: str | None, token: str | None, as_json: bool) -> None:
    with connected(server_url, token, as_json) as remote:
        answer = remote.client.import_trace(source.read_bytes())
        remote.answer(answer, answer.trace)


def register(group: click.Group) -> None:
    """Add `export` and `import` to `holm trace`."""

    @group.command("export")
    @click.argument("target", metavar="BOX_ID|FILE.jsonl")
    @click.option(
        "--out",
        "-o",
        type=click.Path(dir_okay=False, path_type=Path),
        help="The file to write (default: TRACE.holm, test_TRACE.py, TRACE_playwright.py).",
    )
    @click.option(
        "--as",
        "as_",
        type=click.Choice(["holm", "pytest", "playwright"]),
        default="holm",
        show_default=True,
        help="holm: one .holm file (the trace, its frames and blobs); pytest: a test that "
        "strict-replays it (the .holm written beside it); playwright: its page steps as a "
        "Playwright script.",
    )
    @click.option("--json", "as_json", is_flag=True, help="Errors as JSON.")
    @click.option("--token", metavar="TOKEN", help=TOKEN_HELP)
    @click.option("--url", "server_url", metavar="URL", help=_URL_HELP)
    def export_command(
        target: str,
        out: Path | None,
        as_: str,
        as_json: bool,
        token: str | None,
        server_url: str | None,
    ) -> None:
        """Write a trace as one file and print its path: a box's (BOX_ID, from the server)
        or a trace file of a state dir, with exactly the frames and blobs it names."""
        export_trace(target, out, as_, server_url, token, as_json)

    @group.command("import")
    @click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
    @click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
    @click.option("--token", metavar="TOKEN", help=TOKEN_HELP)
    @click.option("--url", "server_url", metavar="URL", help=_URL_HELP)
    def import_command(
        source: Path, as_json: bool, token: str | None, server_url: str | None
    ) -> None:
        """Import a .holm file into the server (`POST /v1/traces`) and print the new trace's
        ID: a removed box's, which reads, views, diffs and forks like any other."""
        import_trace(source, server_url, token, as_json)


__all__ = ["archive_of_box", "archive_of_file", "export_trace", "import_trace", "register"]
