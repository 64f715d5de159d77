"""`holm image`: the images of the runtimes that build them (the docker runtime).

holm image build [--runtime docker] [--spec FILE] [--package P]…   build ahead of need
holm image ls [--runtime NAME]
holm image rm DIGEST [--runtime docker]
"""

from __future__ import annotations

import sys
import time
from typing import IO

import click
import msgspec
from rich.console import Console

from holm.cli.boxes import launch_body
from holm.cli.output import print_json, print_table, when
from holm.cli.remote import Remote, remote
from holm.errors import Failed
from holm.wire.api import ImageInfo

DEFAULT_RUNTIME = "docker"
# How often a build the server queued is read again.
POLL_SECS = 1.0


@click.group("image")
def image() -> None:
    """Images of the runtimes that build them: build one before a box needs it, list, remove."""


@image.command("build")
@click.option("--runtime", default=DEFAULT_RUNTIME, show_default=True, help="The runtime.")
@click.option(
    "--spec",
    "spec_file",
    type=click.File("rb"),
    help="A spec JSON file (or a body with `spec`); - reads stdin.",
)
@click.option("--package", "packages", multiple=True, help="An apt package; repeatable.")
@remote
def build(
    remote: Remote, runtime: str, spec_file: IO[bytes] | None, packages: tuple[str, ...]
) -> None:
    """Build the image of a spec (the default desktop without --spec) and print its name.
    A first build takes minutes: it shows the time it has taken on stderr."""
    spec = launch_body(spec_file).spec
    desktop = msgspec.structs.replace(spec.desktop, packages=[*spec.desktop.packages, *packages])
    spec = msgspec.structs.replace(spec, desktop=desktop)
    console = Console(file=sys.stderr)
    began = time.monotonic()
    status = console.status("building the image") if console.is_terminal else None
    if status is not None:
        status.start()
    try:
        info = remote.client.build_image(runtime, spec)
        # A server that queues its jobs answers at once with `building`.
        while info.state == "building":
            if status is not None:
                status.update(f"building {info.digest}: {time.monotonic() - began:.0f} s")
            time.sleep(POLL_SECS)
            info = remote.client.image(runtime, info.digest)
    finally:
        if status is not None:
            status.stop()
    if info.state == "failed":
        raise Failed(f"the image {info.digest} did not build: {info.reason or 'no reason given'}")
    if remote.as_json:
        print_json(info)
    else:
        click.echo(info.image)
        click.echo(f"built in {time.monotonic() - began:.1f} s", err=True)


@image.command("ls")
@click.option("--runtime", help="Only this runtime's images.")
@remote
def list_images(remote: Remote, runtime: str | None) -> None:
    """List the images the server built."""
    found = remote.client.images(runtime)
    if remote.as_json:
        print_json(found)
        return
    print_table(
        ("DIGEST", "RUNTIME", "IMAGE", "STATE", "PACKAGES", "SIZE", "CREATED"),
        [_row(info) for info in found],
    )


@image.command("rm")
@click.argument("digest")
@click.option("--runtime", default=DEFAULT_RUNTIME, show_default=True, help="The runtime.")
@remote
def remove(remote: Remote, digest: str, runtime: str) -> None:
    """Remove an image (refused while a box uses it)."""
    info = remote.client.remove_image(runtime, digest)
    if remote.as_json:
        print_json(info)
    else:
        click.echo(info.digest)


def _row(info: ImageInfo) -> list[str]:
    size = "-" if info.size_bytes is None else f"{info.size_bytes / 1e9:.2f} GB"
    return [
        info.digest,
        info.runtime,
        info.image or "-",
        info.state or "built",
        ",".join(info.packages) or "-",
        size,
        when(info.created_at_ms),
    ]


COMMANDS = [image]
