"""Box lifecycle commands: `new`, `ls`, `box`, `rm`, `pause`, `resume`, `stop`, `fork`,
and `runtimes`."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import IO, Any, TypeVar, get_args

import click
import msgspec

from holm.cli.output import (
    compact_json,
    from_now,
    print_fields,
    print_json,
    print_table,
    progress,
    when,
)
from holm.cli.params import DURATION, convert, decode_file, source_name
from holm.cli.remote import Remote, remote, screen_option
from holm.errors import BadRequest, Failed
from holm.wire.api import (
    MAX_FORK_BRANCHES,
    BoxView,
    CreateBox,
    ForkBranch,
    ForkOrigin,
    ReplayReport,
)
from holm.wire.spec import MAX_SCREENS, Feature, Placement, Spec

F = TypeVar("F", bound=Callable[..., Any])

FEATURES: tuple[str, ...] = get_args(Feature)
# How often a command that waits reads a starting box again.
POLL_SECS = 0.5


def _features(text: str) -> list[Feature]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in FEATURES]
    if unknown:
        raise click.BadParameter(
            f"unknown {', '.join(unknown)}; features are {', '.join(FEATURES)}",
            param_hint="--features",
        )
    return convert(names, list[Feature], "--features")


def launch_body(spec_file: IO[bytes] | None) -> CreateBox:
    """`--spec FILE`: a spec, or a whole create body with `spec` and `placement`."""
    if spec_file is None:
        return CreateBox()
    raw = decode_file(spec_file, dict[str, Any])
    if raw.keys() & {"spec", "placement"}:
        return convert(raw, CreateBox, source_name(spec_file))
    return CreateBox(spec=convert(raw, Spec, source_name(spec_file)))


def await_start(remote: Remote, box: BoxView) -> BoxView:
    """Read a queued box until it is no longer `starting`; a box that failed is an error
    (its ID is printed first, so that a script can still remove it)."""
    if box.state == "starting":
        with progress(f"starting {box.id}"):
            while box.state == "starting":
                time.sleep(POLL_SECS)
                box = remote.client.get_box(box.id)
    if box.state == "failed":
        print_box_id(remote, box)
        raise Failed(f"box {box.id} did not start: {box.reason or 'no reason given'}")
    return box


def queued_work_options(work: str) -> Callable[[F], F]:
    """`--idempotency-key` and `--wait/--no-wait` of a command whose work the server may
    queue (a launch, a fork)."""
    key = click.option("--idempotency-key", help=f"Repeat a {work} without doing it twice.")
    wait = click.option(
        "--wait/--no-wait",
        default=True,
        show_default=True,
        help=f"When the server queues the {work}, wait until the box is ready.",
    )
    return lambda command: key(wait(command))


def print_box_id(remote: Remote, box: BoxView) -> None:
    if remote.as_json:
        print_json(box)
    else:
        click.echo(box.id)


@click.command("new")
@click.option(
    "--spec",
    "spec_file",
    type=click.File("rb"),
    help="A spec JSON file (or a body with `spec` and `placement`); - reads stdin.",
)
@click.option("--width", type=click.IntRange(64, 8192), help="Screen width in pixels.")
@click.option("--height", type=click.IntRange(64, 8192), help="Screen height in pixels.")
@click.option("--screens", type=click.IntRange(1, MAX_SCREENS), help="Number of screens.")
@click.option(
    "--features",
    metavar="LIST",
    help=f"Comma-separated, the whole set: {','.join(FEATURES)}. '' is the bare desktop.",
)
@click.option("--package", "packages", multiple=True, help="An apt package; repeatable.")
@click.option("--no-network", is_flag=True, help="No network access in the box.")
@click.option("--runtime", help="A runtime name. Default: the server's.")
@click.option("--memory", help="Memory limit, such as 2g.")
@click.option("--cpus", help="CPU limit, such as 2.")
@click.option("--expires", type=DURATION, help="Remove the box after this long (90s, 1h).")
@click.option("--idle-timeout", type=DURATION, help="Remove the box after this long unused.")
@click.option("--persistent", is_flag=True, help="Keep the box's files when it stops.")
@click.option("--profile", help="A browser profile name.")
@queued_work_options("launch")
@remote
def new_box(
    remote: Remote,
    spec_file: IO[bytes] | None,
    width: int | None,
    height: int | None,
    screens: int | None,
    features: str | None,
    packages: tuple[str, ...],
    no_network: bool,
    runtime: str | None,
    memory: str | None,
    cpus: str | None,
    expires: int | None,
    idle_timeout: int | None,
    persistent: bool,
    profile: str | None,
    idempotency_key: str | None,
    wait: bool,
) -> None:
    """Launch a box and print its ID. Flags override the --spec file."""
    body = launch_body(spec_file)
    desktop = body.spec.desktop
    desktop_changes: dict[str, Any] = {
        "width": width,
        "height": height,
        "screens": screens,
        "features": None if features is None else _features(features),
    }
    desktop = msgspec.structs.replace(
        desktop,
        **{name: value for name, value in desktop_changes.items() if value is not None},
        packages=[*desktop.packages, *packages],
    )
    policy = body.spec.policy
    if no_network:
        policy = msgspec.structs.replace(policy, network=False)
    spec = msgspec.structs.replace(body.spec, desktop=desktop, policy=policy)
    placement_changes: dict[str, Any] = {
        "runtime": runtime,
        "memory": memory,
        "cpus": cpus,
        "expires_after_secs": expires,
        "idle_timeout_secs": idle_timeout,
        "profile": profile,
        "persistent": persistent or None,
    }
    placement = msgspec.structs.replace(
        body.placement,
        **{name: value for name, value in placement_changes.items() if value is not None},
    )
    with progress("launching a box"):
        box = remote.client.create_box(spec, placement, idempotency_key=idempotency_key)
    if wait:
        box = await_start(remote, box)
    print_box_id(remote, box)


@click.command("ls")
@click.option("--quiet", "-q", is_flag=True, help="Print only the IDs.")
@remote
def list_boxes(remote: Remote, quiet: bool) -> None:
    """List the boxes."""
    boxes = remote.client.list_boxes()
    if remote.as_json:
        print_json(boxes)
    elif quiet:
        for box in boxes:
            click.echo(box.id)
    else:
        print_table(
            ("ID", "STATE", "RUNTIME", "SCREENS", "SIZE", "CREATED", "EXPIRES"),
            [
                (
                    box.id,
                    box.state,
                    box.runtime,
                    str(box.screens),
                    f"{box.width}x{box.height}",
                    when(box.created_at_ms),
                    from_now(box.expires_at_ms),
                )
                for box in boxes
            ],
        )


def secret_values(items: Sequence[str]) -> dict[str, str]:
    """`--secret NAME=VALUE`, or `--secret NAME` for the environment variable NAME."""
    values: dict[str, str] = {}
    for item in items:
        name, given, value = item.partition("=")
        if not given:
            if name not in os.environ:
                raise BadRequest(f"--secret {name}: no environment variable {name}")
            value = os.environ[name]
        values[name] = value
    return values


def state_text(state: str, reason: str | None) -> str:
    return state + (f" ({reason})" if reason else "")


def fork_text(origin: ForkOrigin) -> str:
    """The source box of a fork, and the seq it was replayed up to when not all of it."""
    return origin.source + ("" if origin.up_to is None else f" up to {origin.up_to}")


def box_fields(box: BoxView) -> list[tuple[str, str]]:
    fields = [
        ("id", box.id),
        ("state", state_text(box.state, box.reason)),
        ("runtime", box.runtime),
        ("spec_digest", box.spec_digest),
        ("screens", str(box.screens)),
        ("size", f"{box.width}x{box.height}"),
        ("created", when(box.created_at_ms)),
        ("expires", f"{when(box.expires_at_ms)} ({from_now(box.expires_at_ms)})"),
    ]
    if box.owner:
        fields.append(("owner", box.owner))
    if box.forked_from:
        fields.append(("forked_from", fork_text(box.forked_from)))
    if box.adopted:
        fields.append(("adopted", "yes"))
    fields.extend(("viewer_url", url) for url in box.viewer_urls or [box.viewer_url or "-"])
    fields.append(("devtools_url", box.devtools_url or "-"))
    if box.vnc is not None:
        # A password box's VNC doors (the password is in the create answer only: --json).
        fields.extend((f"vnc_{door.screen}", door.url) for door in box.vnc.doors)
    fields.append(("spec", compact_json(box.spec)))
    fields.append(("placement", compact_json(box.placement)))
    return fields


@click.command("box")
@click.argument("box_id")
@remote
def show_box(remote: Remote, box_id: str) -> None:
    """Show one box, with its spec_digest."""
    box = remote.client.get_box(box_id)
    if remote.as_json:
        print_json(box)
    else:
        print_fields(box_fields(box))


@click.command("rm")
@click.argument("box_ids", nargs=-1, required=True, metavar="ID...")
@remote
def remove_boxes(remote: Remote, box_ids: tuple[str, ...]) -> None:
    """Remove boxes (their traces stay). Prints each ID removed."""
    for box_id in box_ids:
        remote.client.delete_box(box_id)
        if not remote.as_json:
            click.echo(box_id)
    if remote.as_json:
        print_json({"removed": list(box_ids)})


@click.command("pause")
@click.argument("box_id")
@remote
def pause_box(remote: Remote, box_id: str) -> None:
    """Pause a box; `resume` brings it back as it was."""
    print_box_id(remote, remote.client.pause_box(box_id))


@click.command("resume")
@click.argument("box_id")
@remote
def resume_box(remote: Remote, box_id: str) -> None:
    """Resume a paused or stopped box."""
    print_box_id(remote, remote.client.resume_box(box_id))


@click.command("stop")
@click.argument("box_id")
@remote
def stop_box(remote: Remote, box_id: str) -> None:
    """Stop a box and release its memory (a persistent box keeps its files)."""
    print_box_id(remote, remote.client.stop_box(box_id))


def _replay_notes(replay: ReplayReport) -> list[str]:
    notes = [f"replayed {replay.ok} of {replay.attempted} steps"]
    if replay.stopped_at is not None:
        notes.append(f"stopped at seq {replay.stopped_at}")
    if replay.truncated:
        notes.append("stopped after the time limit")
    notes.extend(f"skipped seq {s.seq} ({s.kind}): {s.why}" for s in replay.skipped)
    return notes


@click.command("fork")
@click.argument("box_id")
@click.option("--up-to", type=int, help="Do the trace's steps up to this seq.")
@click.option(
    "--count",
    type=click.IntRange(1, MAX_FORK_BRANCHES),
    default=1,
    show_default=True,
    help="How many boxes replay it at once (each ID printed on a line of its own).",
)
@click.option(
    "--placement",
    "placement_file",
    type=click.File("rb"),
    help="A placement JSON file for the new box; it replaces the source's.",
)
@click.option(
    "--secret",
    "secret_items",
    multiple=True,
    metavar="NAME[=VALUE]",
    help="A value for a secret the trace's steps name; NAME alone takes it from the "
    "environment variable NAME (kept out of the command line).",
)
@queued_work_options("fork")
@remote
def fork_box(
    remote: Remote,
    box_id: str,
    up_to: int | None,
    count: int,
    placement_file: IO[bytes] | None,
    secret_items: tuple[str, ...],
    idempotency_key: str | None,
    wait: bool,
) -> None:
    """Make a new box that does BOX_ID's recorded steps again; print its ID.

    With --count K, K boxes replay the same steps at once; their IDs are printed one a
    line. What each replay did, skipped, or where it stopped goes to stderr (--json: the
    whole result on stdout)."""
    placement = None if placement_file is None else decode_file(placement_file, Placement)
    if up_to is not None and up_to < 0:
        raise BadRequest("--up-to must be a seq, 0 or more")
    with progress(f"forking {box_id}"):
        result = remote.client.fork(
            box_id,
            up_to=up_to,
            placement=placement,
            count=count,
            idempotency_key=idempotency_key,
            secrets=secret_values(secret_items),
        )
    branches = result.branches or [ForkBranch(box=result.box, replay=result.replay)]
    if wait:
        branches = [
            msgspec.structs.replace(b, box=await_start(remote, b.box))
            if b.box.state == "starting"
            else b
            for b in branches
        ]
        result = msgspec.structs.replace(
            result,
            box=branches[0].box,
            branches=branches if result.branches is not None else None,
        )
    if remote.as_json:
        print_json(result)
        return
    for branch in branches:
        click.echo(branch.box.id)
        replay = branch.replay
        if replay.attempted or replay.skipped or replay.truncated:
            mark = f"{branch.box.id}: " if len(branches) > 1 else ""
            for note in _replay_notes(replay):
                click.echo(f"holm: {mark}{note}", err=True)


@click.command("runtimes")
@remote
def list_runtimes(remote: Remote) -> None:
    """List the server's runtimes and what each can do."""
    runtimes = remote.client.runtimes()
    if remote.as_json:
        print_json(runtimes)
        return
    rows = []
    for runtime in runtimes:
        can = msgspec.structs.asdict(runtime.can)
        abilities = [name for name, value in can.items() if value is True]
        abilities.append(f"max_screens={can['max_screens']}")
        # Spares up of those asked for, per spec the warm pool keeps.
        pool = " ".join(f"{view.ready}/{view.count}" for view in runtime.pool or [])
        rows.append((runtime.name, "yes" if runtime.default else "", " ".join(abilities), pool))
    print_table(("NAME", "DEFAULT", "CAN", "POOL"), rows)
    now_ms = time.time() * 1000
    for runtime in runtimes:
        for view in runtime.pool or []:
            if view.failures and view.next_retry_at_ms is not None:
                wait_s = max(0, round((view.next_retry_at_ms - now_ms) / 1000))
                click.echo(
                    f"holm: spares of {view.spec_digest[:19]} on {runtime.name} do not start "
                    f"({view.failures} in a row; next try in {wait_s} s): {view.last_failure}",
                    err=True,
                )


@click.command("view")
@click.argument("box_id")
@screen_option
@click.option("--control", is_flag=True, help="A ticket that also sends keys and the pointer.")
@remote
def view_box(remote: Remote, box_id: str, screen: int, control: bool) -> None:
    """Print the URL of the screen's viewer page (noVNC, through holmd), with a ticket
    good for 15 minutes. Without --control the viewer only watches."""
    made = remote.client.viewer_ticket(box_id, screen=screen, mode="control" if control else "view")
    if remote.as_json:
        print_json(made)
    else:
        click.echo(made.url)


COMMANDS = (
    new_box,
    view_box,
    list_boxes,
    show_box,
    remove_boxes,
    pause_box,
    resume_box,
    stop_box,
    fork_box,
    list_runtimes,
)

__all__ = ["COMMANDS", "await_start", "box_fields", "fork_text", "state_text"]
