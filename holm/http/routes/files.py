"""Files and commands in a box. `exec` is recorded as `executed` (and done again by a fork);
reading and writing a file are recorded as `file_read`/`file_written` with the path and
size, never the bytes; listing and searching are reads, not recorded."""

from __future__ import annotations

import base64

from aiohttp import web

from holm.adapters.base import ExecResult
from holm.wire.api import (
    ExecRequest,
    FileContents,
    FileList,
    FileWritten,
    GlobQuery,
    GlobResult,
    GrepRequest,
    GrepResult,
    PathQuery,
)

from ..routing import Route, body_of, engine_of, json_response, query_of

BOX = "/v1/boxes/{id}"


async def run_exec(request: web.Request) -> web.Response:
    body = await body_of(request, ExecRequest)
    result = await engine_of(request).exec(request.match_info["id"], body.argv, body.timeout_ms)
    return json_response(result)


async def read_file(request: web.Request) -> web.Response:
    query = query_of(request, PathQuery)
    data = await engine_of(request).read_file(request.match_info["id"], query.path)
    return json_response(
        FileContents(path=query.path, contents_base64=base64.b64encode(data).decode())
    )


async def write_file(request: web.Request) -> web.Response:
    body = await body_of(request, FileContents)
    size = await engine_of(request).write_file(
        request.match_info["id"], body.path, body.contents_base64
    )
    return json_response(FileWritten(path=body.path, bytes=size))


async def list_files(request: web.Request) -> web.Response:
    query = query_of(request, PathQuery)
    entries = await engine_of(request).list_files(request.match_info["id"], query.path)
    return json_response(FileList(path=query.path, entries=entries))


async def grep(request: web.Request) -> web.Response:
    body = await body_of(request, GrepRequest)
    matches, cut = await engine_of(request).grep(
        request.match_info["id"],
        body.pattern,
        body.path,
        body.include,
        body.ignore_case,
        body.limit,
    )
    return json_response(GrepResult(matches=matches, cut=cut))


async def glob(request: web.Request) -> web.Response:
    query = query_of(request, GlobQuery)
    paths, cut = await engine_of(request).glob(
        request.match_info["id"], query.pattern, query.path, query.limit
    )
    return json_response(GlobResult(paths=paths, cut=cut))


ROUTES = [
    Route(
        "POST",
        f"{BOX}/exec",
        run_exec,
        "Run a command (at most 10 minutes)",
        body=ExecRequest,
        response=ExecResult,
    ),
    Route("GET", f"{BOX}/files", read_file, "Read a file", query=PathQuery, response=FileContents),
    Route(
        "PUT", f"{BOX}/files", write_file, "Write a file", body=FileContents, response=FileWritten
    ),
    Route(
        "GET",
        f"{BOX}/files/list",
        list_files,
        "List a directory",
        query=PathQuery,
        response=FileList,
    ),
    Route(
        "POST", f"{BOX}/files/grep", grep, "Search in files", body=GrepRequest, response=GrepResult
    ),
    Route(
        "GET", f"{BOX}/files/glob", glob, "Find files by name", query=GlobQuery, response=GlobResult
    ),
]
