"""Native widgets (`POST …/screens/{screen}/desktop/node`): one widget operation through the
box's accessibility bus, answered as a batch's `on_node` step would. Not recorded, as the
page routes are not: only a batch's `on_node` steps are (`acted`), so only those are done
again by a fork."""

from __future__ import annotations

from aiohttp import web

from holm.wire.actions import NodeOp, OnNode
from holm.wire.results import NodeDone

from ..routing import Route, act_response, body_of, box_and_screen
from .screens import SCREEN


async def node(request: web.Request) -> web.Response:
    _, screen = box_and_screen(request)
    what: NodeOp = await body_of(request, NodeOp)  # type: ignore[arg-type]
    return await act_response(request, OnNode(what=what), screen)


ROUTES = [
    Route(
        "POST",
        f"{SCREEN}/desktop/node",
        node,
        "Act on native widgets",
        body=NodeOp,
        response=NodeDone,
    ),
]
