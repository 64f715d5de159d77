"""The MCP server of holmd: the SDK's low-level `Server` with holm's tools, its Streamable
HTTP session manager, and the `/mcp` route that bridges it into the aiohttp app."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import mcp_types as types
import msgspec
from aiohttp import web
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from holm.errors import HolmError
from holm.wire.api import BoxList

from ..forwarding import FORWARDED_BY
from ..routing import CONFIG, ENGINE, MCP_PATH, Caller, Route, caller_of, engine_of, public_base
from .across import every_replicas_boxes, on_owner
from .bridge import asgi_handler, run_manager
from .tools import BY_NAME, TOOLS, Content, Tool, list_boxes, text

log = logging.getLogger(__name__)
_box_list = msgspec.json.Decoder(BoxList)

PATH = MCP_PATH
MANAGER = web.AppKey("mcp_sessions", StreamableHTTPSessionManager)
# What rides from the HTTP request to a tool, in the ASGI scope's `state`, which the SDK hands
# to the tool as its request: the caller (the guards settled it), and the origin a person's
# browser reaches this server at, where a box's viewer pages are (`public_base`).
CALLER_STATE = "holm.caller"
VIEWER_BASE_STATE = "holm.viewer_base"
# With replicas (across.py): the caller's bearer token, which a tool call on a box another
# holmd runs is sent there with, and whether this call came from another holmd (it is
# then never sent on).
AUTHORIZATION_STATE = "holm.authorization"
FORWARDED_STATE = "holm.forwarded"
# Calls another holmd sends on (across.py): one JSON-RPC request each, no session.
PEER_MANAGER = web.AppKey("mcp_peer_calls", StreamableHTTPSessionManager)

INSTRUCTIONS = (
    "holm runs isolated Linux desktops (boxes) for you to drive. Start one with launch_box, "
    "look with screenshot, act with click, type_text, press_key, open_url, run_command, or "
    "several steps at once with batch. What you do is recorded in the box's trace (the "
    "trace tool reads it), and fork_box makes a new box that does the same steps again."
)


def _version() -> str:
    try:
        return version("holm")
    except PackageNotFoundError:
        return "0"


def list_tools_result() -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name=tool.name,
                description=tool.description,
                input_schema=tool.input_schema(),
                annotations=_annotations(tool),
            )
            for tool in TOOLS
        ]
    )


def _annotations(tool: Tool) -> types.ToolAnnotations:
    """The hints that say something: MCP's defaults are not read-only and destructive, and
    a read-only tool's `destructiveHint` means nothing."""
    if tool.read_only:
        return types.ToolAnnotations(read_only_hint=True)
    return types.ToolAnnotations(destructive_hint=tool.destructive)


def mcp_server(app: web.Application) -> Server[Any]:
    """The MCP server whose tools drive `app`'s engine."""
    listed = list_tools_result()

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listed

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = BY_NAME.get(params.name)
        if tool is None:
            return _error(f"bad_request: no tool named {params.name!r}")
        engine = app.get(ENGINE)
        if engine is None:
            return _error("unavailable: the server is starting")
        state = _state(ctx)
        caller = state.get(CALLER_STATE)
        if not isinstance(caller, Caller):
            return _error("denied: the call came without the HTTP request that carries it")
        viewer_base = state.get(VIEWER_BASE_STATE)
        authorization = state.get(AUTHORIZATION_STATE)
        authorization = authorization if isinstance(authorization, str) else None
        here_only = state.get(FORWARDED_STATE) is True
        try:
            call = tool.decode(params.arguments)
            if call.box and not here_only:
                elsewhere = await on_owner(app, call.box, params, authorization)
                if elsewhere is not None:
                    return elsewhere
            if call.box:
                # The same refusal the REST routes' guards give: another workspace's box is
                # as absent as a box that never was.
                engine.box_seen_by(call.box, caller.workspace)
            call = dataclasses.replace(
                call,
                workspace=caller.workspace,
                viewer_base=viewer_base if isinstance(viewer_base, str) else None,
            )
            content = await tool.run(engine, call)
            if tool.run is list_boxes and not here_only:
                mine = _box_list.decode(_text_of(content))
                content = text(await every_replicas_boxes(app, mine, authorization))
        except HolmError as exc:
            return _error(f"{exc.code}: {exc.message}")
        return types.CallToolResult(content=list(content))

    server: Server[Any] = Server(
        "holm",
        version=_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    # The SDK's one default middleware opens an OpenTelemetry span per message; holmd runs
    # no exporter, so the span only cost each call time (bench/mcp_calls.py --breakdown).
    server.middleware.clear()
    return server


def _state(ctx: ServerRequestContext[Any]) -> dict[str, Any]:
    """What `handle_mcp` put in the `state` of the HTTP request that carried this call (each
    call is judged by its own request's key, so a key removed mid-session is refused at its
    next request)."""
    scope = getattr(ctx.request, "scope", None)
    state = scope.get("state") if isinstance(scope, dict) else None
    return state if isinstance(state, dict) else {}


def _text_of(content: list[Content]) -> str:
    first = content[0]
    assert isinstance(first, types.TextContent)
    return first.text


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


async def handle_mcp(request: web.Request) -> web.StreamResponse:
    engine_of(request)  # the engine runs, so the tools can reach it
    forwarded = FORWARDED_BY in request.headers
    manager = request.app[PEER_MANAGER if forwarded else MANAGER]
    state = {
        CALLER_STATE: caller_of(request),
        VIEWER_BASE_STATE: public_base(request),
        AUTHORIZATION_STATE: request.headers.get("Authorization"),
        FORWARDED_STATE: forwarded,
    }
    return await asgi_handler(request, manager.handle_request, state)


def setup_mcp(app: web.Application) -> None:
    """Make the app's MCP session managers, run with the app (`cleanup_ctx`): the one of
    clients' sessions, and the stateless one of calls other holmd send on."""
    server = mcp_server(app)
    manager, peers = (
        StreamableHTTPSessionManager(
            server,
            # A tool's answer as one JSON body rather than an event stream: no tool sends
            # anything before its result, and a stream cost a click 6 ms (bench/mcp_calls.py).
            json_response=True,
            # The limit of every other body; a chunked body is not announced, so the SDK
            # counts.
            max_request_body_size=app[CONFIG].max_body_bytes,
            stateless=stateless,
        )
        for stateless in (False, True)
    )
    app[MANAGER] = manager
    app[PEER_MANAGER] = peers

    async def sessions(app: web.Application) -> AsyncIterator[None]:
        async with run_manager(manager.run), run_manager(peers.run):
            yield

    app.cleanup_ctx.append(sessions)


ROUTES = [
    Route(
        "*",
        PATH,
        handle_mcp,
        "MCP over Streamable HTTP (the same bearer token or workspace key); see docs/mcp.md",
        tags=("mcp",),
    )
]
