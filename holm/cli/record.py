"""`holm record start|stop|status`: a screen's recording, an MP4 written in the box (fetch
it with `holm file get`)."""

from __future__ import annotations

import click

from holm.cli.output import print_fields, print_json, when
from holm.cli.remote import Remote, remote, screen_option
from holm.wire.actions import DEFAULT_RECORD_FPS, MAX_RECORD_FPS
from holm.wire.results import Recording


@click.group("record")
def record() -> None:
    """Record a screen as an MP4 (H.264) in the box; needs the `video` feature."""


@record.command("start")
@click.argument("box_id")
@screen_option
@click.option(
    "--fps",
    type=click.IntRange(1, MAX_RECORD_FPS),
    default=DEFAULT_RECORD_FPS,
    show_default=True,
    help="Frames per second.",
)
@remote
def start(remote: Remote, box_id: str, screen: int, fps: int) -> None:
    """Start recording the screen; print the path of the MP4 in the box."""
    _print_path(remote, remote.client.start_recording(box_id, screen=screen, fps=fps))


@record.command("stop")
@click.argument("box_id")
@screen_option
@remote
def stop(remote: Remote, box_id: str, screen: int) -> None:
    """Stop the recording; print the path of its MP4 in the box."""
    _print_path(remote, remote.client.stop_recording(box_id, screen=screen))


@record.command("status")
@click.argument("box_id")
@screen_option
@remote
def status(remote: Remote, box_id: str, screen: int) -> None:
    """Show the recording running, else the last one made since the desktop came up."""
    view = remote.client.recording(box_id, screen=screen)
    if remote.as_json:
        print_json(view)
        return
    fields = [("recording", "yes" if view.recording else "no")]
    if view.path is not None:
        fields += [
            ("path", view.path),
            ("size", f"{view.width}x{view.height} at {view.fps} fps"),
            ("started", when(view.started_at_ms)),
        ]
    if view.stopped_at_ms is not None:
        fields.append(("stopped", when(view.stopped_at_ms)))
    print_fields(fields)


def _print_path(remote: Remote, view: Recording) -> None:
    if remote.as_json:
        print_json(view)
    else:
        click.echo(view.path)


COMMANDS: tuple[click.Command, ...] = (record,)

__all__ = ["COMMANDS"]
