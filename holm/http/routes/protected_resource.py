"""`GET /.well-known/oauth-protected-resource`: RFC 9728's metadata of the resource that
holmd is (its REST API and `/mcp`), named by every `401`'s `WWW-Authenticate`. An MCP
client looks for it on a 401; it learns that a bearer token goes in the `Authorization`
header and that no authorization server issues one (`authorization_servers` is left
out): the token is the server's or a workspace's key, given by hand (docs/mcp.md)."""

from __future__ import annotations

import msgspec
from aiohttp import web

from ..routing import WELL_KNOWN_RESOURCE, Route, json_response, public_base


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


ROUTES = [
    Route(
        "GET",
        WELL_KNOWN_RESOURCE,
        protected_resource,
        "The OAuth protected-resource metadata (RFC 9728) every 401 names",
        response=ProtectedResource,
        auth="none",
    ),
]
