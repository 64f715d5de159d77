"""`holm browser …`: the Chromium of a box's first screen, driven by meaning (open a URL,
read the page, find elements, list the controls, click, fill, run JavaScript, capture)."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import click

from holm.cli import browser_state
from holm.cli.output import print_json, print_table
from holm.cli.remote import Remote, remote
from holm.wire.actions import (
    MAX_WAIT_MS,
    CheckOp,
    ChooseOp,
    ClickOp,
    FillOp,
    PageShotWhat,
    WaitForOp,
)
from holm.wire.results import Element, ElementDone

TAB_HELP = "A tab ID or label (default: the front tab)."


def _name(element: Element | None) -> str:
    if element is None:
        return ""
    return f"{element.role or element.tag} {json.dumps(element.name, ensure_ascii=False)}"


def _done(remote: Remote, done: ElementDone) -> None:
    if remote.as_json:
        print_json(done)
        return
    click.echo(f"{done.op} {_name(done.element)}")
    click.echo(f"url {done.url}" + ("  (navigated)" if done.navigated else ""))
    for changed in done.changed:
        value = "" if changed.value is None else f" = {changed.value}"
        click.echo(f"changed {_name(changed)}{value}")


def _box(element: Element) -> str:
    b = element.box
    return "" if b is None else f"{b.x:g},{b.y:g} {b.width:g}x{b.height:g}"


@click.group("browser")
def browser() -> None:
    """Drive the Chromium of a box by meaning: elements are named by their label, text,
    placeholder or role and name ("button Continue"), or a CSS or XPath selector."""


@browser.command("open")
@click.argument("box_id")
@click.argument("url")
@click.option("--new-tab", is_flag=True, help="Open the URL in a new tab.")
@click.option("--label", help="Name the tab, to address it later.")
@remote
def open_url(remote: Remote, box_id: str, url: str, new_tab: bool, label: str | None) -> None:
    """Open URL in the box's browser and print the tab and its title."""
    opened = remote.client.open_url(box_id, url, new_tab=new_tab, label=label)
    if remote.as_json:
        print_json(opened)
    else:
        click.echo(f"{opened.tab}  {opened.title}  {opened.url}")


@browser.command("read")
@click.argument("box_id")
@click.option(
    "--format", "format_", type=click.Choice(["markdown", "text", "raw"]), default="markdown"
)
@click.option("--limit", type=click.IntRange(1), default=20_000, show_default=True)
@click.option("--tab", help=TAB_HELP)
@remote
def read(remote: Remote, box_id: str, format_: str, limit: int, tab: str | None) -> None:
    """Print the page as markdown, text or HTML."""
    page = remote.client.read_page(box_id, format=format_, limit=limit, tab=tab)  # type: ignore[arg-type]
    if remote.as_json:
        print_json(page)
    else:
        click.echo(page.text)


@browser.command("find")
@click.argument("box_id")
@click.argument("query")
@click.option("--exact", is_flag=True, help="Match the whole text, case and all.")
@click.option("--role", help="Only elements of this role.")
@click.option("--limit", type=click.IntRange(1), default=10, show_default=True)
@click.option("--tab", help=TAB_HELP)
@remote
def find(
    remote: Remote,
    box_id: str,
    query: str,
    exact: bool,
    role: str | None,
    limit: int,
    tab: str | None,
) -> None:
    """List the elements QUERY finds, best first."""
    found = remote.client.find(box_id, query, exact=exact, role=role, limit=limit, tab=tab)
    if remote.as_json:
        print_json(found)
        return
    print_table(
        ("ROLE", "NAME", "BOX", "VISIBLE"),
        [
            (
                e.role or e.tag,
                e.name,
                _box(e),
                "yes" if e.visible else "no",
            )
            for e in found.elements
        ],
    )


@browser.command("snapshot")
@click.argument("box_id")
@click.option("--scope", help="Only the controls inside the element this query finds.")
@click.option("--delta", is_flag=True, help="Only the controls changed since the last one.")
@click.option("--tab", help=TAB_HELP)
@remote
def snapshot(remote: Remote, box_id: str, scope: str | None, delta: bool, tab: str | None) -> None:
    """List the controls on the page."""
    snap = remote.client.snapshot(box_id, scope=scope, delta=delta, tab=tab)
    if remote.as_json:
        print_json(snap)
        return
    print_table(
        ("ROLE", "NAME", "VALUE"),
        [(c.role or c.tag, c.name, "" if c.value is None else c.value) for c in snap.controls],
    )


@browser.command("click")
@click.argument("box_id")
@click.argument("query")
@click.option("--exact", is_flag=True, help="Match the whole text, case and all.")
@click.option("--tab", help=TAB_HELP)
@remote
def click_(remote: Remote, box_id: str, query: str, exact: bool, tab: str | None) -> None:
    """Click the element QUERY finds."""
    _done(remote, remote.client.element(box_id, ClickOp(query=query, exact=exact), tab=tab))


@browser.command("fill")
@click.argument("box_id")
@click.argument("query")
@click.argument("text")
@click.option("--exact", is_flag=True, help="Match the whole text, case and all.")
@click.option("--tab", help=TAB_HELP)
@remote
def fill(remote: Remote, box_id: str, query: str, text: str, exact: bool, tab: str | None) -> None:
    """Fill the text field QUERY finds with TEXT."""
    what = FillOp(query=query, text=text, exact=exact)
    _done(remote, remote.client.element(box_id, what, tab=tab))


@browser.command("eval")
@click.argument("box_id")
@click.argument("expression")
@click.option("--tab", help=TAB_HELP)
@remote
def evaluate(remote: Remote, box_id: str, expression: str, tab: str | None) -> None:
    """Run a JavaScript EXPRESSION in the page and print its value as JSON."""
    result = remote.client.evaluate(box_id, expression, tab=tab)
    if remote.as_json:
        print_json(result)
    else:
        click.echo(json.dumps(result.value, ensure_ascii=False))


@browser.command("shot")
@click.argument("box_id")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="The PNG file to write; - for stdout. Default: BOX_ID-page.png.",
)
@click.option("--full", is_flag=True, help="The whole page, not only what the window shows.")
@click.option("--tab", help=TAB_HELP)
@remote
def shot(remote: Remote, box_id: str, output: str | None, full: bool, tab: str | None) -> None:
    """Write a screenshot of the page as a PNG file and print its path."""
    captured = remote.client.page_screenshot(box_id, PageShotWhat(full=full, tab=tab))
    data = base64.b64decode(captured.data_base64)
    if output == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    path = Path(output or f"{box_id}-page.png")
    path.write_bytes(data)
    if remote.as_json:
        print_json({"path": str(path), "width": captured.width, "height": captured.height})
    else:
        click.echo(path)


@browser.command("check")
@click.argument("box_id")
@click.argument("query")
@click.option("--off", is_flag=True, help="Uncheck it.")
@click.option("--tab", help=TAB_HELP)
@remote
def check(remote: Remote, box_id: str, query: str, off: bool, tab: str | None) -> None:
    """Check (or --off: uncheck) the checkbox or radio QUERY finds."""
    _done(remote, remote.client.element(box_id, CheckOp(query=query, on=not off), tab=tab))


@browser.command("choose")
@click.argument("box_id")
@click.argument("query")
@click.argument("options", nargs=-1, required=True)
@click.option("--tab", help=TAB_HELP)
@remote
def choose(
    remote: Remote, box_id: str, query: str, options: tuple[str, ...], tab: str | None
) -> None:
    """Choose OPTIONS (labels or values) in the <select> QUERY finds."""
    what = ChooseOp(query=query, options=list(options))
    _done(remote, remote.client.element(box_id, what, tab=tab))


@browser.command("wait")
@click.argument("box_id")
@click.argument("query")
@click.option("--gone", is_flag=True, help="Wait until no element matches.")
@click.option("--within-ms", type=click.IntRange(1, MAX_WAIT_MS), default=10_000, show_default=True)
@click.option("--tab", help=TAB_HELP)
@remote
def wait(
    remote: Remote, box_id: str, query: str, gone: bool, within_ms: int, tab: str | None
) -> None:
    """Wait until QUERY finds a visible element (or, --gone, none)."""
    what = WaitForOp(query=query, gone=gone, within_ms=within_ms)
    _done(remote, remote.client.element(box_id, what, tab=tab))


@browser.command("console")
@click.argument("box_id")
@click.option("--errors", is_flag=True, help="Only errors and exceptions.")
@click.option("--clear", is_flag=True, help="Forget what was printed.")
@click.option("--tab", help=TAB_HELP)
@remote
def console(remote: Remote, box_id: str, errors: bool, clear: bool, tab: str | None) -> None:
    """Print what the page logged to its console."""
    log = remote.client.console(box_id, errors=errors, clear=clear, tab=tab)
    if remote.as_json:
        print_json(log)
        return
    for message in log.messages:
        click.echo(f"{message.level:9} {message.text}")


@browser.command("tabs")
@click.argument("box_id")
@remote
def tabs(remote: Remote, box_id: str) -> None:
    """List the browser's tabs, the front one first."""
    found = remote.client.tabs(box_id)
    if remote.as_json:
        print_json(found)
        return
    print_table(
        ("TAB", "LABEL", "TITLE", "URL"), [(t.tab, t.label or "", t.title, t.url) for t in found]
    )


@browser.command("close")
@click.argument("box_id")
@click.argument("tab")
@remote
def close(remote: Remote, box_id: str, tab: str) -> None:
    """Close TAB (an ID or a label)."""
    done = remote.client.close_tab(box_id, tab)
    remote.answer(done, f"{done.tab} closed")


for command in browser_state.COMMANDS:
    browser.add_command(command)

COMMANDS: tuple[click.Command, ...] = (browser,)

__all__ = ["COMMANDS"]
