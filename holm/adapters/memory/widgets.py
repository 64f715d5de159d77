"""The native widgets of a memory box (what AT-SPI gives a real one): each window is an
application whose one widget is its frame."""

from __future__ import annotations

from holm.agent.widgets.atspi import role_matches, text_rank
from holm.errors import BadRequest, NotFound
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.values import Region

from .screen import MemoryScreen


def widgets_of(s: MemoryScreen) -> list[r.Node]:
    """The model's widgets: each window is an application (named by its class) whose one
    widget is its frame."""
    return [
        r.Node(
            role="application",
            name=w.class_,
            path=w.class_,
            children=[
                r.Node(
                    role="frame",
                    name=w.title,
                    path=f"{w.class_}/0",
                    states=["showing", "visible"] + (["active"] if w.active else []),
                    bounds=Region(w.x, w.y, w.width, w.height),
                )
            ],
        )
        for w in s.windows
    ]


def on_node(s: MemoryScreen, what: a.NodeOp) -> r.NodeDone:
    op = a.op_of(what)
    apps = widgets_of(s)
    if isinstance(what, a.NodeTreeOp):
        return r.NodeDone(op=op, nodes=[n for n in apps if what.app in (None, n.name)])
    q = what.node
    hits = [
        n
        for app in apps
        if q.app in (None, app.name)
        for n in (app, *app.children)
        if (q.path is None or n.path == q.path)
        and role_matches(q.role, n.role)
        and text_rank(q.query, n.name) is not None
    ]
    if isinstance(what, a.NodeFindOp):
        return r.NodeDone(op=op, nodes=hits[: what.limit], cut=len(hits) > what.limit)
    if not hits:
        raise NotFound("no widget matches the query")
    if isinstance(what, a.NodeFocusOp):
        return r.NodeDone(op=op, node=hits[0])
    kind = "has no action" if isinstance(what, a.NodeInvokeOp) else "takes no value"
    raise BadRequest(f"the {hits[0].role} at {hits[0].path} {kind}")
