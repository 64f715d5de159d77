"""MCP across replicas (docs/scale.md#replicas): a session lives on the holmd it reached,
and a tool call on a box another holmd runs is sent to that holmd's `/mcp`, as one
JSON-RPC `tools/call` in the SDK's stateless mode (no session to open there first), with
the caller's own bearer token, so the owner checks the caller and runs the tool as it
runs its own; its result comes back as it was. `list_boxes` answers this holmd's boxes
and those each other live holmd answers, as `GET /v1/boxes` does.

A request marked `x-holm-forwarded-by` is served statelessly by the holmd it reaches
(server.py), and never sent on again."""

from __future__ import annotations

import json
import logging
from typing import Any

import aiohttp
import mcp_types as types
import msgspec
from aiohttp import web

from holm.errors import BadRequest, Unavailable
from holm.events.leases import Replica
from holm.wire.api import BoxList

from ..forwarding import (
    FORWARDED_BY,
    REFUSALS,
    SESSION,
    taking_over,
    unreachable,
    with_others,
)
from ..routing import ENGINE, MCP_PATH

log = logging.getLogger(__name__)

_ACCEPT = "application/json, text/event-stream"
_box_list = msgspec.json.Decoder(BoxList)


async def on_owner(
    app: web.Application,
    box: str,
    params: types.CallToolRequestParams,
    authorization: str | None,
) -> types.CallToolResult | None:
    """The tool call as the holmd that runs `box` answers it; None when this holmd runs it
    (or no holmd does: the call then fails here as for any unknown box)."""
    engine = app[ENGINE]
    ownership = engine.ownership
    if ownership is None or engine.answers_here(box):
        return None
    if box in ownership.adopting:
        raise taking_over(box)
    holder = await ownership.holder(box)
    if holder is None or holder.owner == ownership.me:
        return None
    if holder.replica is None:
        raise taking_over(box)
    try:
        return await _call(app, holder.replica, params, authorization)
    except Unavailable:
        ownership.drop_holder(box)
        raise


async def _call(
    app: web.Application,
    replica: Replica,
    params: types.CallToolRequestParams,
    authorization: str | None,
) -> types.CallToolResult:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": params.model_dump(mode="json", by_alias=True, exclude_none=True),
    }
    result = await _ask(app, replica, message, authorization)
    return types.CallToolResult.model_validate(result)


async def _ask(
    app: web.Application, replica: Replica, message: dict[str, Any], authorization: str | None
) -> Any:
    """The `result` of one JSON-RPC request to `replica`'s `/mcp`."""
    ownership = app[ENGINE].ownership
    assert ownership is not None
    headers = {"Accept": _ACCEPT, "Content-Type": "application/json", FORWARDED_BY: ownership.me}
    if authorization is not None:
        headers["Authorization"] = authorization
    url = replica.url.rstrip("/") + MCP_PATH
    try:
        async with app[SESSION].post(url, data=json.dumps(message), headers=headers) as answer:
            status, body = answer.status, await answer.read()
    except (aiohttp.ClientError, OSError) as exc:
        raise unreachable(replica, exc) from None
    if status != 200:
        refused = f"the holmd that runs this box refused the call: {status}"
        raise REFUSALS.get(status, Unavailable)(refused)
    try:
        decoded = json.loads(body)
    except ValueError:
        raise Unavailable("the holmd that runs this box answered no JSON") from None
    if not isinstance(decoded, dict) or "result" not in decoded:
        error = decoded.get("error") if isinstance(decoded, dict) else None
        said = error.get("message") if isinstance(error, dict) else None
        raise BadRequest(f"the holmd that runs this box refused the call: {said or decoded!r}")
    return decoded["result"]


async def every_replicas_boxes(
    app: web.Application, mine: BoxList, authorization: str | None
) -> BoxList:
    """`mine` and the boxes each other live holmd's `list_boxes` answers, oldest first."""
    ownership = app[ENGINE].ownership
    if ownership is None:
        return mine
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "list_boxes", "arguments": {}},
    }

    async def listed(replica: Replica) -> BoxList | None:
        try:
            result = types.CallToolResult.model_validate(
                await _ask(app, replica, message, authorization)
            )
            first = result.content[0] if result.content else None
            if result.is_error or not isinstance(first, types.TextContent):
                return None
            return _box_list.decode(first.text)
        except (Unavailable, BadRequest, msgspec.DecodeError, ValueError) as exc:
            log.info("replica %s did not list its boxes: %s", replica.id, exc)
            return None

    return await with_others(ownership, mine, listed)


__all__ = ["every_replicas_boxes", "on_owner"]
