"""`holm node BOX tree|find|focus|invoke|set …`: the native widgets of a box's applications,
through its accessibility bus (a box with the `accessibility` feature)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import click

from holm.cli.output import print_json, print_table
from holm.cli.remote import Remote, remote, screen_option
from holm.wire.actions import (
    NodeFindOp,
    NodeFocusOp,
    NodeInvokeOp,
    NodeOp,
    NodeQuery,
    NodeSetOp,
    NodeTreeOp,
)
from holm.wire.results import Node, NodeDone


@click.group("node")
@click.argument("box_id")
@click.pass_context
def node(ctx: click.Context, box_id: str) -> None:
    """Read and drive the native widgets (GTK, Chromium, …) of box BOX_ID. A widget is
    named by a QUERY (its name or label) with `--role`, or by the `--path` a listing
    printed."""
    ctx.obj = box_id


def _query_options(command: Callable[..., None]) -> Callable[..., None]:
    for option in reversed(
        [
            click.option("--role", help="Only widgets of this role (text, button, …)."),
            click.option("--app", help="Only the widgets of this application."),
            click.option("--path", help="The widget at this path (as a listing printed it)."),
        ]
    ):
        command = option(command)
    return command


def _query(query: str | None, role: str | None, app: str | None, path: str | None) -> NodeQuery:
    if query is None and role is None and path is None:
        raise click.UsageError("name the widget: a QUERY, --role or --path")
    return NodeQuery(query=query, role=role, app=app, path=path)


def _run(remote: Remote, screen: int, what: NodeOp) -> NodeDone:
    box_id = click.get_current_context().find_object(str)
    assert box_id is not None
    done: NodeDone = remote.client.node(box_id, what, screen=screen)
    return done


def _label(n: Node) -> str:
    return json.dumps(n.name or n.label or "", ensure_ascii=False)


def _bounds(n: Node) -> str:
    b = n.bounds
    return "" if b is None else f"{b.x},{b.y} {b.width}x{b.height}"


def _one(remote: Remote, done: NodeDone) -> None:
    if remote.as_json:
        print_json(done)
        return
    n = done.node
    if n is not None:
        value = "" if n.value is None else f" = {json.dumps(n.value, ensure_ascii=False)}"
        action = f" ({done.action})" if done.action else ""
        click.echo(f"{done.op}{action} {n.role} {_label(n)}{value}  {n.path}")


def _lines(nodes: list[Node], depth: int = 0) -> Iterator[tuple[str, ...]]:
    for n in nodes:
        value = "" if n.value is None else n.value
        yield ("  " * depth + n.role, _label(n), value, _bounds(n), n.path)
        yield from _lines(n.children, depth + 1)


def _listing(remote: Remote, done: NodeDone) -> None:
    if remote.as_json:
        print_json(done)
        return
    print_table(("ROLE", "NAME", "VALUE", "BOUNDS", "PATH"), list(_lines(done.nodes or [])))
    if done.cut:
        click.echo("(cut: a limit left some widgets out)", err=True)


@node.command("tree")
@click.option("--app", help="Only this application (default: every one).")
@click.option("--depth", type=click.IntRange(1, 64), default=32, show_default=True)
@screen_option
@remote
def tree(remote: Remote, app: str | None, depth: int, screen: int) -> None:
    """Print the applications' widgets, each under its parent."""
    _listing(remote, _run(remote, screen, NodeTreeOp(app=app, depth=depth)))


@node.command("find")
@click.argument("query", required=False)
@_query_options
@click.option("--limit", type=click.IntRange(1), default=10, show_default=True)
@screen_option
@remote
def find(remote: Remote, query: str | None, limit: int, screen: int, **named: Any) -> None:
    """List the widgets QUERY names, best first."""
    what = NodeFindOp(node=_query(query, **named), limit=limit)
    _listing(remote, _run(remote, screen, what))


@node.command("focus")
@click.argument("query", required=False)
@_query_options
@screen_option
@remote
def focus(remote: Remote, query: str | None, screen: int, **named: Any) -> None:
    """Give the widget QUERY names the focus."""
    _one(remote, _run(remote, screen, NodeFocusOp(node=_query(query, **named))))


@node.command("invoke")
@click.argument("query", required=False)
@_query_options
@click.option("--action", help="The action's name (default: the widget's first action).")
@screen_option
@remote
def invoke(
    remote: Remote, query: str | None, action: str | None, screen: int, **named: Any
) -> None:
    """Do an action of the widget QUERY names (click, press, activate, …)."""
    what = NodeInvokeOp(node=_query(query, **named), action=action)
    _one(remote, _run(remote, screen, what))


@node.command("set")
@click.argument("query", required=False)
@click.option("--value", required=True, help="The text (or the number) to set.")
@_query_options
@screen_option
@remote
def set_(remote: Remote, query: str | None, value: str, screen: int, **named: Any) -> None:
    """Set the text of the field (or the number of the slider) QUERY names."""
    what = NodeSetOp(node=_query(query, **named), value=value)
    _one(remote, _run(remote, screen, what))


COMMANDS: tuple[click.Command, ...] = (node,)

__all__ = ["COMMANDS"]
