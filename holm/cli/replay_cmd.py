"""`holm replay` and `holm diff` (docs/fork.md).

    holm replay TRACE.jsonl [--strict] [--no-frames] [--runtime local] [--keep] [--json]
        do a trace's steps again on a new box made in this process, no server needed;
        with --strict, stop at the first step whose outcome differs from the recording
    holm replay TRACE.jsonl --loose [--steps RUN] [--box BOX] [--json]
        match each step of a run (RUN: a trace or a step list; default TRACE's own) by key
        anywhere in TRACE: a step that can change the desktop gets its recorded outcome
        (mocked), a read runs on BOX (on the server), or is reported as needing a box
    holm diff A B [--json]
        how close two runs are: their steps aligned by key, their last frames compared;
        A and B are two trace files, or two box IDs on a server

Exit codes: 0 the replay passed / the two runs are the same; 1 it diverged or stopped (loose:
a step missed, needed a box, or ran on the box with another outcome) / they differ; 3 a file
that is not a trace; other holm errors as in docs/cli.md.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

import click
import msgspec

from holm.adapters.base import Runtime
from holm.cli.actions import read_batch
from holm.cli.history import read_server_trace
from holm.cli.remote import Remote, remote, screen_option
from holm.config import Config, load_config
from holm.errors import BadRequest, HolmError
from holm.events.codec import CorruptLine
from holm.events.trace_file import read_trace_file
from holm.offline import OfflineReplay, replay_entries
from holm.replay.diff import diff_traces
from holm.replay.loose import LooseRun, RunStep, plan_loose, replay_loose, run_of_list, run_of_trace
from holm.replay.strict import FRAME_TOLERANCE
from holm.wire.actions import Action
from holm.wire.api import LooseReport, Outcome
from holm.wire.diff import TraceDiff
from holm.wire.entries import Entry


def make_runtimes(config: Config, server_id: str | None) -> dict[str, Runtime]:
    """The runtimes of a replay without a server. Imported when a replay runs: the runtimes
    bring the docker SDK, which every other `holm` command would load for nothing."""
    from holm.adapters.registry import make_runtimes as make

    return make(config, server_id)


EXIT_DIFFERENT = 1


frame_tolerance_option = click.option(
    "--frame-tolerance",
    type=click.FloatRange(0, 1),
    default=FRAME_TOLERANCE,
    show_default=True,
    help="The mean pixel difference (0-1) two frames may have and still match; 0 (the "
    "default) asks for the same pixels.",
)


@click.command("replay")
@click.argument("trace_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--strict",
    is_flag=True,
    help="Compare each step with the recording (ok, exec code and output, settled frames) "
    "and stop at the first divergence.",
)
@click.option(
    "--loose",
    is_flag=True,
    help="Match each step of a run by key anywhere in TRACE_FILE: serve the recorded outcome "
    "of a step that can change the desktop (mocked), run a read on --box. No box is made.",
)
@click.option(
    "--steps",
    "steps_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="With --loose: the run to match, a trace file or a step list (as `holm batch` "
    "takes). Default: TRACE_FILE's own steps.",
)
@click.option(
    "--box",
    "box_id",
    metavar="BOX",
    help="With --loose: the box on the server (--url) that the steps that only read run on.",
)
@screen_option
@click.option(
    "--no-frames",
    is_flag=True,
    help="With --strict: do not compare frames (for screens that are not deterministic).",
)
@frame_tolerance_option
@click.option("--runtime", metavar="NAME", help="The runtime to replay on. Default: the trace's.")
@click.option("--up-to", type=int, metavar="SEQ", help="Replay the steps up to this seq.")
@click.option(
    "--keep",
    is_flag=True,
    help="Keep the box (in $HOLM_STATE_DIR, where holmd adopts it) instead of deleting it.",
)
@remote
def replay(
    connection: Remote,
    trace_file: Path,
    strict: bool,
    loose: bool,
    steps_file: Path | None,
    box_id: str | None,
    screen: int,
    no_frames: bool,
    frame_tolerance: float,
    runtime: str | None,
    up_to: int | None,
    keep: bool,
) -> None:
    """Do the steps of TRACE_FILE again on a new box, without a server; or, with --loose,
    match a run's steps in it."""
    if loose:
        fork_options = [
            ("--strict", strict),
            ("--no-frames", no_frames),
            ("--runtime", runtime is not None),
            ("--up-to", up_to is not None),
            ("--keep", keep),
        ]
        given = [name for name, on in fork_options if on]
        if given:
            raise click.UsageError(f"{', '.join(given)} cannot go with --loose")
    elif steps_file is not None or box_id is not None:
        raise click.UsageError("--steps and --box go with --loose")
    entries = _read_file(trace_file)
    report: OfflineReplay | LooseReport
    if loose:
        report = _replay_loose(connection, entries, steps_file, box_id, screen)
    else:
        options = ReplayOptions(
            strict=strict,
            compare_frames=not no_frames,
            frame_tolerance=frame_tolerance,
            runtime=runtime,
            up_to=up_to,
            keep=keep,
        )
        report = asyncio.run(_replay(trace_file, entries, options))
    if connection.as_json:
        click.echo(msgspec.json.encode(report).decode())
    elif isinstance(report, LooseReport):
        _print_loose(trace_file, report)
    else:
        _print_replay(trace_file, report)
    if not report.passed:
        raise click.exceptions.Exit(EXIT_DIFFERENT)


class ReplayOptions(msgspec.Struct, kw_only=True):
    strict: bool
    compare_frames: bool
    frame_tolerance: float
    runtime: str | None
    up_to: int | None
    keep: bool


async def _replay(trace_file: Path, entries: list[Entry], options: ReplayOptions) -> OfflineReplay:
    keep = options.keep

    async def reference(frame_hash: str) -> bytes | None:
        return await asyncio.to_thread(_frame_beside, trace_file, frame_hash)

    config = load_config()
    # A box that is deleted at the end lives in a folder of its own; a kept one where a
    # holmd on the same state dir will adopt it.
    scratch = None if keep else Path(tempfile.mkdtemp(prefix="holm-replay-", dir="/tmp"))
    if scratch is not None:
        config = msgspec.structs.replace(config, state_dir=scratch)
        server_id = "holm-replay"
    else:
        from holm.config import server_id_of

        server_id = await asyncio.to_thread(server_id_of, config.state_dir)
    runtimes = make_runtimes(config, server_id)
    try:
        return await replay_entries(
            entries,
            config,
            runtimes,
            server_id=server_id,
            strict=options.strict,
            compare_frames=options.compare_frames,
            runtime=options.runtime,
            up_to=options.up_to,
            keep=keep,
            frame_tolerance=options.frame_tolerance,
            reference=reference,
        )
    finally:
        for made in runtimes.values():
            await made.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _replay_loose(
    connection: Remote,
    recorded: list[Entry],
    steps_file: Path | None,
    box_id: str | None,
    screen: int,
) -> LooseReport:
    run = run_of_trace(recorded) if steps_file is None else _read_run(steps_file, screen)
    plan = plan_loose(recorded, run)
    run_step: RunStep | None = None
    if box_id is not None:
        # A box that is not there would only show up at the first read, or never.
        connection.client.get_box(box_id)
        run_step = _on_box(connection, box_id)
    return asyncio.run(replay_loose(plan, run_step, box=box_id))


def _read_run(path: Path, screen: int) -> LooseRun:
    """The run a loose replay matches: a step list (a JSON list of actions, or a batch
    object), or a trace (JSON lines)."""
    try:
        body = msgspec.json.decode(path.read_bytes())
    except msgspec.DecodeError:
        # Not one JSON value: JSON lines, a trace.
        return run_of_trace(_read_file(path))
    if isinstance(body, list) or (isinstance(body, dict) and "kind" not in body):
        with path.open("rb") as file:
            return run_of_list(read_batch(file).actions, screen)
    return run_of_trace(_read_file(path))


def _on_box(connection: Remote, box_id: str) -> RunStep:
    async def run(screen: int, action: Action) -> Outcome:
        answer = await asyncio.to_thread(connection.client.act, box_id, [action], screen=screen)
        (step,) = answer.results
        return Outcome.of(step)

    return run


def _print_loose(trace_file: Path, report: LooseReport) -> None:
    verdict = "passed" if report.passed else "FAILED"
    mocked = sum(step.mocked for step in report.matched)
    ran = report.attempted - mocked
    on_box = f" on box {report.box}" if report.box is not None else ""
    click.echo(
        f"{trace_file}: {verdict} (loose): {len(report.matched)} of {report.steps} steps "
        f"matched, {mocked} mocked, {ran} run{on_box}, {len(report.needs_box)} need a box, "
        f"{len(report.missed)} missed"
    )
    for skipped in report.skipped:
        click.echo(f"  skipped seq {skipped.seq} {skipped.kind}: {skipped.why}")
    for step in report.matched:
        if step.outcome is None:
            click.echo(f"  needs a box: seq {step.seq} {step.type} (recorded seq {step.recorded})")
        elif step.expected is not None and step.outcome.ok != step.expected.ok:
            click.echo(
                f"  seq {step.seq} {step.type}: {_said(step.outcome)} on the box, "
                f"{_said(step.expected)} in the recording (seq {step.recorded})"
            )
    for missed in report.missed:
        click.echo(f"  missed: seq {missed.seq} {missed.kind}, no unused step of key {missed.key}")


def _said(outcome: Outcome) -> str:
    if outcome.ok:
        return "ok"
    return "refused" if outcome.error is None else f"refused ({outcome.error.message})"


def _print_replay(trace_file: Path, report: OfflineReplay) -> None:
    mode = "strict" if report.strict else "fork"
    frames = "" if report.compare_frames or not report.strict else ", frames not compared"
    verdict = "passed" if report.passed else "FAILED"
    click.echo(
        f"{trace_file}: {verdict} ({mode}{frames}): {report.ok} of {report.steps} steps ok "
        f"on {report.runtime}, box {report.box}{' (kept)' if report.kept else ''}"
    )
    for skipped in report.skipped:
        click.echo(f"  skipped seq {skipped.seq} {skipped.kind}: {skipped.why}")
    if report.divergence is not None:
        click.echo(f"  {report.divergence.describe()}")
    elif report.stopped_at is not None:
        click.echo(f"  stopped at seq {report.stopped_at}")
    if report.truncated:
        click.echo("  truncated: the replay ran out of time")


@click.command("diff")
@click.argument("a")
@click.argument("b")
@frame_tolerance_option
@remote
def diff(connection: Remote, a: str, b: str, frame_tolerance: float) -> None:
    """How close two runs are: A and B are two trace files, or two box IDs on the server.
    Says where they first part (the step, and how: failed, missing, extra, page, screen).
    Exit 0 when their steps match and went the same way, and their last frames match."""
    files = [Path(a).is_file(), Path(b).is_file()]
    if any(files) and not all(files):
        raise click.UsageError("give two trace files, or two box IDs")
    if all(files):
        result = asyncio.run(_diff_files(Path(a), Path(b), frame_tolerance))
    else:
        result = asyncio.run(_diff_boxes(connection, a, b, frame_tolerance))
    if connection.as_json:
        click.echo(msgspec.json.encode(result).decode())
    else:
        _print_diff(result)
    if not result.same(frame_tolerance):
        raise click.exceptions.Exit(EXIT_DIFFERENT)


async def _diff_files(a: Path, b: Path, frame_tolerance: float) -> TraceDiff:
    paths = {str(a): a, str(b): b}

    async def read_entries(name: str) -> list[Entry]:
        return _read_file(paths[name])

    async def read_frame(name: str, frame_hash: str) -> bytes | None:
        return await asyncio.to_thread(_frame_beside, paths[name], frame_hash)

    return await diff_traces(
        str(a), str(b), read_entries, read_frame, frame_tolerance=frame_tolerance
    )


def _frame_beside(trace_file: Path, frame_hash: str) -> bytes | None:
    """A frame of a trace file: in its state dir (`<state>/frames/<trace>/`), or in a
    `frames/<trace>/` folder beside it (the recorded fixtures)."""
    for root in (trace_file.parent.parent, trace_file.parent):
        path = root / "frames" / trace_file.stem / f"{frame_hash}.png"
        if path.is_file():
            return path.read_bytes()
    return None


async def _diff_boxes(connection: Remote, a: str, b: str, frame_tolerance: float) -> TraceDiff:
    async def read_entries(box_id: str) -> list[Entry]:
        entries, _ = await asyncio.to_thread(
            read_server_trace, connection, box_id, after=None, limit=None
        )
        return entries

    async def read_frame(box_id: str, frame_hash: str) -> bytes | None:
        try:
            return await asyncio.to_thread(connection.client.trace_frame, box_id, frame_hash)
        except HolmError as error:
            if error.code == "not_found":
                return None
            raise

    return await diff_traces(a, b, read_entries, read_frame, frame_tolerance=frame_tolerance)


def _print_diff(result: TraceDiff) -> None:
    scope = "" if result.a_up_to is None else f" (A up to seq {result.a_up_to})"
    click.echo(
        f"{result.a} → {result.b}{scope}: {result.matched} steps matched, "
        f"{len(result.missing)} missing, {len(result.extra)} extra"
    )
    parted = result.divergence
    if parted is None:
        click.echo("  no divergence: every step went the same way")
    else:
        click.echo(f"  first divergence ({parted.kind}): {parted.message}")
    for step in result.missing:
        click.echo(f"  missing: A seq {step.seq} {step.kind}")
    for step in result.extra:
        click.echo(f"  extra:   B seq {step.seq} {step.kind}")
    for frame in result.frames:
        if frame.note is not None:
            click.echo(f"  screen {frame.screen}: {frame.note}")
        elif frame.pixels_equal:
            click.echo(f"  screen {frame.screen}: same pixels")
        else:
            region = frame.changed
            where = (
                ""
                if region is None
                else (f", changed {region.width}x{region.height} at {region.x},{region.y}")
            )
            click.echo(f"  screen {frame.screen}: distance {frame.distance:.6f}{where}")


def _read_file(path: Path) -> list[Entry]:
    """The entries of a trace file; a file that is not one is a `bad_request` (exit 3),
    printed as every holm error is (with --json, its body)."""
    try:
        entries = read_trace_file(path).entries
    except (CorruptLine, msgspec.DecodeError, ValueError) as exc:
        raise BadRequest(f"{path} is not a trace: {exc}") from exc
    if not entries:
        raise BadRequest(f"{path} is not a trace: it has no entries")
    return entries


COMMANDS = (replay, diff)

__all__ = ["COMMANDS", "diff", "replay"]
