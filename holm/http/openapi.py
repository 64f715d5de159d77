"""`GET /v1/openapi.json`: the OpenAPI document, generated from the declared routes and
their wire types with `msgspec.json.schema_components`; no body schema is written by hand.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Sequence
from typing import Any

import msgspec
from aiohttp import web

from holm.errors import ErrorBody

from .routing import Route, json_response

REF = "#/components/schemas/{name}"
_PARAM = re.compile(r"\{([^}:]+)(?::([^}]+))?\}")
_ANY_METHOD = ("get", "post", "put", "patch", "delete")
_ERROR_STATUSES = {
    "400": "The request is not valid (bad_request), or the server cannot do it (unsupported)",
    "401": "A bearer token is needed (denied)",
    "403": "A request from a web page of another origin (denied)",
    "404": "No such box, runtime, route or object (not_found)",
    "405": "The path does not take this method (bad_request)",
    "409": "Refused (denied, screen_unavailable)",
    "410": "The box was removed (gone)",
    "413": "The body is too large (bad_request)",
    "415": "The body is not said to be JSON (bad_request)",
    "421": "The Host header does not name this server (denied)",
    "422": "The action ran and did not succeed (failed)",
    "502": "The server could not reach the box (transport)",
    "503": "The runtime or store is not available (unavailable)",
    "504": "The action did not finish in time (timeout)",
}


def _version() -> str:
    try:
        return importlib.metadata.version("holm")
    except importlib.metadata.PackageNotFoundError:
        return "0"


def openapi_document(routes: Sequence[Route]) -> dict[str, Any]:
    types: list[Any] = [ErrorBody]
    for route in routes:
        types.extend(t for t in (route.query, route.body, route.response) if t is not None)
    unique = list(dict.fromkeys(types))
    schemas, components = msgspec.json.schema_components(unique, ref_template=REF)
    schema_of = dict(zip(unique, schemas, strict=True))
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        path = _PARAM.sub(lambda m: "{" + m.group(1) + "}", route.path)
        methods = _ANY_METHOD if route.method == "*" else (route.method.lower(),)
        for method in methods:
            paths.setdefault(path, {})[method] = _operation(route, schema_of, components)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "holm",
            "version": _version(),
            "description": "The REST API of holmd: boxes an agent drives, with a trace.",
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _operation(
    route: Route, schema_of: dict[Any, Any], components: dict[str, Any]
) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "summary": route.summary,
        "operationId": f"{route.method.lower()}:{route.path}",
        "parameters": _path_parameters(route.path) + _query_parameters(route, components),
        "responses": _responses(route, schema_of),
    }
    if route.auth == "none":
        operation["security"] = []
    else:
        operation["security"] = [{"bearer": []}]
    if route.body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": schema_of[route.body]}},
        }
    if route.idempotent:
        operation["parameters"].append(
            {
                "name": "idempotency-key",
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
            }
        )
    if route.method == "DELETE" and route.path == "/v1/boxes/{id}":
        operation["parameters"].append(
            {
                "name": "x-holm-confirm-delete",
                "in": "header",
                "required": True,
                "schema": {"type": "string", "enum": ["true"]},
            }
        )
    return operation


def _path_parameters(path: str) -> list[dict[str, Any]]:
    parameters = []
    for match in _PARAM.finditer(path):
        name, pattern = match.group(1), match.group(2)
        schema: dict[str, Any] = {"type": "string"}
        if pattern == "\\d+":
            schema = {"type": "integer", "minimum": 0}
        parameters.append({"name": name, "in": "path", "required": True, "schema": schema})
    return parameters


def _query_parameters(route: Route, components: dict[str, Any]) -> list[dict[str, Any]]:
    if route.query is None:
        return []
    schema = components[route.query.__name__]
    required = set(schema.get("required", []))
    return [
        {"name": name, "in": "query", "required": name in required, "schema": prop}
        for name, prop in schema.get("properties", {}).items()
    ]


def _responses(route: Route, schema_of: dict[Any, Any]) -> dict[str, Any]:
    error = {"application/json": {"schema": schema_of[ErrorBody]}}
    responses: dict[str, Any] = {}
    for status in (route.status, *route.also):
        if route.content_type == "image/png":
            content: dict[str, Any] = {
                "image/png": {"schema": {"type": "string", "format": "binary"}}
            }
        elif route.content_type != "application/json":
            # A page (the trace's, the viewer's): text of that type.
            content = {route.content_type: {"schema": {"type": "string"}}}
        elif route.response is not None:
            content = {"application/json": {"schema": schema_of[route.response]}}
        elif route.response_schema is not None:
            content = {"application/json": {"schema": route.response_schema}}
        else:
            continue
        responses[str(status)] = {"description": route.summary, "content": content}
    for code, description in _ERROR_STATUSES.items():
        responses[code] = {"description": description, "content": error}
    responses["default"] = {"description": "A server error (internal)", "content": error}
    return responses


def openapi_route(routes: Sequence[Route]) -> Route:
    body = json_response(openapi_document(routes)).body

    async def serve(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    document = {"type": "object", "description": "An OpenAPI 3.1 document"}
    return Route(
        "GET", "/v1/openapi.json", serve, "This document", auth="none", response_schema=document
    )
