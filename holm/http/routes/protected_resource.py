"""`GET /.well-known/oauth-protected-resource`: RFC 9728's metadata of the resource that
holmd is (its REST API and `/mcp`), named by every `401`'s `WWW-Authenticate`. An MCP
client looks for it on a 401; it learns that a bearer token goes in the `Authorization`
header and that no authorization server issues one (`authorization_servers` is left
out): the token is the server's or a workspace's key, given by hand (docs/mcp.md).

A client that runs OAuth on any 401 (the `mcp` SDK's, given an OAuth provider) goes on to
the endpoints MCP's first authorization spec put at the server's root, last of all
`POST /register` (dynamic client registration): that answers a `404` whose message says
what to do instead, which is the error such a client shows."""

from __future__ import annotations

import msgspec
from aiohttp import web

from holm.errors import NotFound

from ..routing import WELL_KNOWN_RESOURCE, Route, json_response, public_base

NO_OAUTH = (
    "holm issues no OAuth clients or tokens: give the MCP client the server's token or a "
    "workspace's key as the header `Authorization: Bearer …` (`holm mcp-config` prints it)"
)


class ProtectedResource(msgspec.Struct, kw_only=True):
    resource: str
    bearer_methods_supported: list[str]
    resource_name: str


async def protected_resource(request: web.Request) -> web.Response:
    return json_response(
        ProtectedResource(
            resource=public_base(request),
            bearer_methods_supported=["header"],
            resource_name="holm",
        )
    )


async def register(request: web.Request) -> web.Response:
    raise NotFound(NO_OAUTH)


ROUTES = [
    Route(
        "GET",
        WELL_KNOWN_RESOURCE,
        protected_resource,
        "The OAuth protected-resource metadata (RFC 9728) every 401 names",
        response=ProtectedResource,
        auth="none",
    ),
    Route(
        "POST",
        "/register",
        register,
        "OAuth dynamic client registration, which holm does not do: a 404 that says so",
        auth="none",
    ),
]
