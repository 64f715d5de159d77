"""Commands that run actions on a screen, each one batch (`POST …/screens/{n}/actions`), so
that a fork does them again: `open`, `mouse`, `keyboard`, `wait`, `app`, `batch`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import IO, get_args

import click

from holm.cli.output import compact_json, print_json
from holm.cli.params import convert, decode_file, point, source_name
from holm.cli.remote import Remote, remote, screen_option
from holm.errors import ErrorBody, HolmError
from holm.wire.actions import (
    DEFAULT_HOLD_MS,
    MAX_HOLD_MS,
    Action,
    Click,
    DoubleClick,
    Drag,
    Launch,
    MouseDown,
    MouseUp,
    Move,
    OpenUrl,
    Press,
    Scroll,
    Type,
    Wait,
    WaitStill,
)
from holm.wire.api import ActionsRequest, ActionsResult, StepResult
from holm.wire.values import Button, Modifier, Motion, Point

button_option = click.option(
    "--button",
    type=click.Choice(get_args(Button)),
    default="left",
    show_default=True,
)
motion_option = click.option(
    "--motion",
    type=click.Choice(get_args(Motion)),
    default="instant",
    show_default=True,
    help="How the pointer travels.",
)
held_option = click.option(
    "--held",
    type=click.Choice(get_args(Modifier)),
    multiple=True,
    help="A modifier held down meanwhile; repeatable.",
)
coordinates = click.argument("coordinates", nargs=-1, type=int, metavar="[X Y]")


def step_line(step: StepResult) -> str:
    if step.ok:
        outcome = "ok" if step.value is None else f"ok {compact_json(step.value)}"
    else:
        error = step.error or ErrorBody(code="failed", message="refused")
        outcome = f"{error.code}: {error.message}"
    return f"{step.index}  {step.type}  {outcome}"


def refusal(result: ActionsResult) -> HolmError | None:
    """The error of the first step that did not succeed, naming the step."""
    for step in result.results:
        if not step.ok:
            error = step.error or ErrorBody(code="failed", message="refused")
            return HolmError.from_body(
                ErrorBody(
                    code=error.code,
                    message=f"step {step.index} ({step.type}): {error.message}",
                    retryable=error.retryable,
                )
            )
    return None


def run_batch(
    remote: Remote,
    box_id: str,
    screen: int,
    batch: ActionsRequest,
    *,
    every_step: bool = False,
    idempotency_key: str | None = None,
) -> ActionsResult:
    """Run a batch and print it: --json the whole result; else a line per step (with
    `every_step`) or the values that reading steps returned. A refused step is an error."""
    result = remote.client.act(box_id, batch, screen=screen, idempotency_key=idempotency_key)
    if remote.as_json:
        print_json(result)
    else:
        for step in result.results:
            if every_step:
                click.echo(step_line(step))
            elif step.ok and step.value is not None:
                click.echo(compact_json(step.value))
    error = refusal(result)
    if error is not None:
        raise error
    return result


def read_batch(file: IO[bytes]) -> ActionsRequest:
    """A batch file: a JSON list of actions, or a batch object with `actions`."""
    body = decode_file(file, object)
    if isinstance(body, dict):
        return convert(body, ActionsRequest, source_name(file))
    return ActionsRequest(actions=convert(body, list[Action], source_name(file)))


def act(remote: Remote, box_id: str, screen: int, *actions: Action) -> None:
    run_batch(remote, box_id, screen, ActionsRequest(actions=list(actions)))


def in_box(command: Callable[..., None]) -> Callable[..., None]:
    """A subcommand of a group whose argument is the box ID (`holm mouse BOX click …`)."""
    return screen_option(click.pass_obj(remote(command)))


@click.command("open")
@click.argument("box_id")
@click.argument("url")
@click.option("--new-tab", is_flag=True, help="Open in a new tab, not the current one.")
@click.option("--label", help="A label to name the tab by later.")
@screen_option
@remote
def open_url(
    remote: Remote, box_id: str, url: str, new_tab: bool, label: str | None, screen: int
) -> None:
    """Open URL in the box's browser."""
    opened = OpenUrl(url=url, target="blank" if new_tab else "current", label=label)
    act(remote, box_id, screen, opened)


@click.group("mouse")
@click.argument("box_id")
@click.pass_context
def mouse(ctx: click.Context, box_id: str) -> None:
    """Pointer actions on BOX_ID: click, double-click, move, drag, scroll, down, up.
    With no X Y, a button acts at the pointer."""
    ctx.obj = box_id


@mouse.command("click")
@coordinates
@button_option
@held_option
@motion_option
@in_box
def mouse_click(
    remote: Remote,
    box_id: str,
    coordinates: Sequence[int],
    button: Button,
    held: Sequence[Modifier],
    motion: Motion,
    screen: int,
) -> None:
    """Click at X Y."""
    at = point(coordinates)
    act(remote, box_id, screen, Click(at=at, button=button, held=list(held), motion=motion))


@mouse.command("double-click")
@coordinates
@button_option
@motion_option
@in_box
def mouse_double_click(
    remote: Remote,
    box_id: str,
    coordinates: Sequence[int],
    button: Button,
    motion: Motion,
    screen: int,
) -> None:
    """Double-click at X Y."""
    act(remote, box_id, screen, DoubleClick(at=point(coordinates), button=button, motion=motion))


@mouse.command("move")
@click.argument("x", type=int)
@click.argument("y", type=int)
@motion_option
@in_box
def mouse_move(remote: Remote, box_id: str, x: int, y: int, motion: Motion, screen: int) -> None:
    """Move the pointer to X Y."""
    act(remote, box_id, screen, Move(to=Point(x=x, y=y), motion=motion))


@mouse.command("drag")
@click.argument("coordinates", nargs=-1, type=int, required=True, metavar="[X1 Y1] X2 Y2")
@button_option
@held_option
@motion_option
@in_box
def mouse_drag(
    remote: Remote,
    box_id: str,
    coordinates: Sequence[int],
    button: Button,
    held: Sequence[Modifier],
    motion: Motion,
    screen: int,
) -> None:
    """Drag from X1 Y1 (default: the pointer) to X2 Y2."""
    if len(coordinates) not in (2, 4):
        raise click.UsageError("drag takes X2 Y2, or X1 Y1 X2 Y2")
    start = point(coordinates[:-2], "the start")
    end = point(coordinates[-2:], "the end")
    assert end is not None
    drag = Drag(from_=start, to=end, button=button, held=list(held), motion=motion)
    act(remote, box_id, screen, drag)


@mouse.command("scroll")
@coordinates
@click.option("--dy", type=int, default=0, help="Notches down (negative: up).")
@click.option("--dx", type=int, default=0, help="Notches right (negative: left).")
@in_box
def mouse_scroll(
    remote: Remote, box_id: str, coordinates: Sequence[int], dy: int, dx: int, screen: int
) -> None:
    """Scroll at X Y by --dy and --dx notches."""
    if not dx and not dy:
        raise click.UsageError("give --dy or --dx")
    act(remote, box_id, screen, Scroll(at=point(coordinates), dx=dx, dy=dy))


@mouse.command("down")
@coordinates
@button_option
@click.option(
    "--hold-ms",
    type=click.IntRange(1, MAX_HOLD_MS),
    default=DEFAULT_HOLD_MS,
    show_default=True,
    help="Release it after this long unless `up` comes first.",
)
@in_box
def mouse_down(
    remote: Remote,
    box_id: str,
    coordinates: Sequence[int],
    button: Button,
    hold_ms: int,
    screen: int,
) -> None:
    """Press a button at X Y and keep it down for the next commands (`move`, `up`)."""
    down = MouseDown(at=point(coordinates), button=button, hold_ms=hold_ms)
    act(remote, box_id, screen, down)


@mouse.command("up")
@coordinates
@button_option
@in_box
def mouse_up(
    remote: Remote, box_id: str, coordinates: Sequence[int], button: Button, screen: int
) -> None:
    """Release a button at X Y."""
    act(remote, box_id, screen, MouseUp(at=point(coordinates), button=button))


@click.group("keyboard")
@click.argument("box_id")
@click.pass_context
def keyboard(ctx: click.Context, box_id: str) -> None:
    """Keyboard actions on BOX_ID: type TEXT, press KEYS."""
    ctx.obj = box_id


@keyboard.command("type")
@click.argument("text")
@click.option("--delay-ms", type=click.IntRange(0, 1000), default=0, help="Between keys.")
@in_box
def keyboard_type(remote: Remote, box_id: str, text: str, delay_ms: int, screen: int) -> None:
    """Type TEXT (- reads it from stdin)."""
    if text == "-":
        text = sys.stdin.read()
    act(remote, box_id, screen, Type(text=text, delay_ms=delay_ms))


def chord(keys: str) -> list[str]:
    names = keys.split("+")
    if not all(names):
        raise click.BadParameter(f"{keys!r}: name each key, such as ctrl+plus")
    return names


@keyboard.command("press")
@click.argument("keys", nargs=-1, required=True)
@in_box
def keyboard_press(remote: Remote, box_id: str, keys: Sequence[str], screen: int) -> None:
    """Press KEYS, one chord after the other: `ctrl+l Return` is ctrl+l, then Return.
    Keys are X keysym names (Return, Tab, BackSpace, a, F5) or ctrl, shift, alt, super."""
    act(remote, box_id, screen, *(Press(chord=chord(each)) for each in keys))


@click.command("wait")
@click.argument("box_id")
@click.argument("ms", type=click.IntRange(0, 30_000), required=False)
@click.option("--still", is_flag=True, help="Wait until the screen stops changing.")
@click.option("--settle-ms", type=click.IntRange(0, 30_000), default=400, show_default=True)
@click.option("--within-ms", type=click.IntRange(0, 30_000), default=10_000, show_default=True)
@screen_option
@remote
def wait(
    remote: Remote,
    box_id: str,
    ms: int | None,
    still: bool,
    settle_ms: int,
    within_ms: int,
    screen: int,
) -> None:
    """Wait MS milliseconds, or --still: until the screen is unchanged for --settle-ms."""
    if still == (ms is not None):
        raise click.UsageError("give MS or --still")
    step: Action = (
        WaitStill(settle_ms=settle_ms, within_ms=within_ms) if ms is None else Wait(ms=ms)
    )
    act(remote, box_id, screen, step)


@click.command("app")
@click.argument("box_id")
@click.argument("name")
@click.argument("args", nargs=-1)
@screen_option
@remote
def launch_app(remote: Remote, box_id: str, name: str, args: Sequence[str], screen: int) -> None:
    """Open application NAME (a catalog name or one of the spec's apps) with ARGS.
    Put `--` before arguments that start with a dash."""
    act(remote, box_id, screen, Launch(app=name, args=list(args)))


@click.command("batch")
@click.argument("box_id")
@click.argument("file", type=click.File("rb"))
@click.option("--keep-going", is_flag=True, help="Continue after a refused step.")
@click.option("--idempotency-key", help="Repeat a batch without running it twice.")
@screen_option
@remote
def batch(
    remote: Remote,
    box_id: str,
    file: IO[bytes],
    keep_going: bool,
    idempotency_key: str | None,
    screen: int,
) -> None:
    """Run the actions in FILE (- for stdin): a JSON list of actions, or a batch object
    with `actions` (and `want`, `settle_ms`, `keep_going`). Prints one line per step."""
    request = read_batch(file)
    if keep_going:
        request.keep_going = True
    run_batch(
        remote,
        box_id,
        screen,
        request,
        every_step=True,
        idempotency_key=idempotency_key,
    )


# `app` (launch_app) is a subcommand of holm.cli.apps's group.
COMMANDS: tuple[click.Command, ...] = (open_url, mouse, keyboard, wait, batch)

__all__ = ["COMMANDS", "act", "launch_app", "read_batch", "refusal", "run_batch", "step_line"]
