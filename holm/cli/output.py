"""How commands print: JSON for scripts, rich tables and key/value lines for people, and
progress on stderr so that stdout stays clean for `$(…)`.

rich is imported by the functions that draw with it, not here: it is a tenth of a `holm`
process's start, and most commands (`holm trace FILE`, `holm exec`) never draw a table."""

from __future__ import annotations

import io
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext

import click
import msgspec


def print_json(value: object) -> None:
    click.echo(msgspec.json.format(msgspec.json.encode(value), indent=2).decode())


def compact_json(value: object) -> str:
    return msgspec.json.encode(value).decode()


def print_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(*row)
    tty = sys.stdout.isatty()
    # Piped, a row is never cut at 80 columns nor padded at its end: one line for awk.
    width = shutil.get_terminal_size().columns if tty else 10_000
    rendered = io.StringIO()
    Console(file=rendered, force_terminal=tty, width=width).print(table)
    for line in rendered.getvalue().splitlines():
        click.echo(line.rstrip())


def print_figures(title: str | None, sections: Sequence[Sequence[tuple[str, str]]]) -> None:
    """Labelled figures in a boxed table, a rule between sections, values to the right."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column()
    table.add_column(justify="right")
    for n, rows in enumerate(sections):
        if n:
            table.add_section()
        for label, value in rows:
            table.add_row(label, value)
    Console(highlight=False).print(table)


def write_stdout(data: bytes) -> None:
    """Bytes as they are (a file's contents, a PNG), after any text already printed."""
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def print_fields(fields: Sequence[tuple[str, str]]) -> None:
    width = max((len(name) for name, _ in fields), default=0)
    for name, value in fields:
        click.echo(f"{name:<{width}}  {value}")


@contextmanager
def progress(message: str) -> Iterator[None]:
    """A spinner on stderr while long work runs, when stderr is a terminal."""
    from rich.console import Console

    console = Console(file=sys.stderr)
    with console.status(message) if console.is_terminal else nullcontext():
        yield


def when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


def from_now(ms: int | None, now_ms: int | None = None) -> str:
    """`in 59m`, `3s ago`: a deadline as a person reads it."""
    if ms is None:
        return "-"
    now = int(time.time() * 1000) if now_ms is None else now_ms
    delta = (ms - now) // 1000
    text = duration_text(abs(delta))
    return f"in {text}" if delta >= 0 else f"{text} ago"


def duration_text(secs: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{secs}s"


__all__ = [
    "compact_json",
    "duration_text",
    "from_now",
    "print_fields",
    "print_figures",
    "print_json",
    "print_table",
    "progress",
    "when",
    "write_stdout",
]
