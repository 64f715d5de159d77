"""`holm bisect BOX --until TEXT`: the first step of a box's trace after which a predicate
holds, found by forking its prefixes in a binary search (holm/bisect.py)."""

from __future__ import annotations

import click

from holm.cli.output import print_json
from holm.cli.remote import Remote, remote, screen_option

# Exit codes: found, or the predicate does not hold after the last step either.
EXIT_NOT_FOUND = 1


@click.command("bisect")
@click.argument("box_id")
@click.option("--until", "text", metavar="TEXT", help="A text on the page or in a window title.")
@click.option(
    "--until-url", "url", metavar="PATTERN", help="A regular expression the page's URL matches."
)
@click.option("--until-frame", "frame", metavar="HASH", help="The frame hash the screen shows.")
@click.option(
    "--until-exit", "command", metavar="CMD", help="A shell command that exits 0 in the box."
)
@screen_option
@click.option("--keep", is_flag=True, help="Keep the forks it made (default: remove each).")
@click.option(
    "--wait-ms",
    type=click.IntRange(0, 60_000),
    default=1000,
    show_default=True,
    help="How long a fork may take to come to the predicate once its replay ended.",
)
@remote
def bisect_box(
    remote: Remote,
    box_id: str,
    text: str | None,
    url: str | None,
    frame: str | None,
    command: str | None,
    screen: int,
    keep: bool,
    wait_ms: int,
) -> None:
    """Find the first step of BOX_ID's trace after which a predicate holds, by forking
    prefixes of the trace in a binary search (at most ceil(log2 steps) + 1 forks); print
    that step. Each probe goes to stderr as it is made (--json: the whole report on stdout).
    Exit 1 when the predicate does not hold after the last step either."""
    from holm.bisect import Predicate, PredicateKind, Probe, bisect

    choices: list[tuple[PredicateKind, str | None]] = [
        ("text", text),
        ("url", url),
        ("frame", frame),
        ("exit", command),
    ]
    given = [(kind, value) for kind, value in choices if value is not None]
    if len(given) != 1:
        raise click.UsageError("give one of --until, --until-url, --until-frame, --until-exit")
    ((kind, value),) = given
    predicate = Predicate(kind=kind, value=value, screen=screen)

    def said(probe: Probe) -> None:
        verdict = "holds" if probe.holds else "does not hold"
        stopped = (
            ""
            if probe.replay.stopped_at is None
            else f", replay stopped at seq {probe.replay.stopped_at}"
        )
        click.echo(
            f"holm: up to step {probe.step} (seq {probe.up_to}), {probe.box}: {verdict}{stopped}",
            err=True,
        )

    report = bisect(
        remote.client,
        box_id,
        predicate,
        keep=keep,
        wait_ms=wait_ms,
        on_probe=None if remote.as_json else said,
    )
    if remote.as_json:
        print_json(report)
    elif report.step is None:
        click.echo(f"it does not hold after the last of {report.steps} steps ({report.forks} fork)")
    else:
        click.echo(
            f"step {report.step} of {report.steps} (seq {report.seq}), in {report.forks} forks"
        )
    if report.step is None:
        raise click.exceptions.Exit(EXIT_NOT_FOUND)


COMMANDS = (bisect_box,)

__all__ = ["COMMANDS", "bisect_box"]
