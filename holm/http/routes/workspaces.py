"""Workspaces and their API keys (docs/server.md, "Workspaces"): made, listed and removed
with the server token only; a key is shown once, by the answer that makes it."""

from __future__ import annotations

from aiohttp import web

from holm.wire.api import (
    CreateKey,
    CreateWorkspace,
    KeyList,
    KeyMade,
    KeysQuery,
    KeyView,
    WorkspaceList,
    WorkspaceView,
)

from ..routing import WORKSPACES, Route, body_of, json_response, query_of


async def list_workspaces(request: web.Request) -> web.Response:
    return json_response(WorkspaceList(workspaces=request.app[WORKSPACES].workspaces()))


async def create_workspace(request: web.Request) -> web.Response:
    body = await body_of(request, CreateWorkspace)
    return json_response(await request.app[WORKSPACES].create_workspace(body.name))


async def list_keys(request: web.Request) -> web.Response:
    query = query_of(request, KeysQuery)
    return json_response(KeyList(keys=request.app[WORKSPACES].keys(query.workspace)))


async def create_key(request: web.Request) -> web.Response:
    body = await body_of(request, CreateKey)
    return json_response(await request.app[WORKSPACES].create_key(body.workspace))


async def remove_key(request: web.Request) -> web.Response:
    return json_response(await request.app[WORKSPACES].remove_key(request.match_info["key"]))


ROUTES = [
    Route(
        "GET",
        "/v1/workspaces",
        list_workspaces,
        "List the workspaces (the server token only)",
        response=WorkspaceList,
        auth="server",
    ),
    Route(
        "POST",
        "/v1/workspaces",
        create_workspace,
        "Make a workspace (the server token only)",
        body=CreateWorkspace,
        response=WorkspaceView,
        auth="server",
    ),
    Route(
        "GET",
        "/v1/keys",
        list_keys,
        "List the API keys, never the keys themselves; `workspace` narrows it to one",
        query=KeysQuery,
        response=KeyList,
        auth="server",
    ),
    Route(
        "POST",
        "/v1/keys",
        create_key,
        "Make an API key of a workspace: the answer is the only place the key is shown",
        body=CreateKey,
        response=KeyMade,
        auth="server",
    ),
    Route(
        "DELETE",
        "/v1/keys/{key}",
        remove_key,
        "Remove an API key (by its key_… id); it is refused from this answer on",
        response=KeyView,
        auth="server",
    ),
]
