"""Files and commands in a box: each route runs one action (`holm.wire.actions`) and
answers its result. `exec` is recorded as `executed` (and done again by a fork); reading and
writing a file are recorded as `file_read`/`file_written` with the path and size, never the
bytes; listing and searching are reads, not recorded."""

from __future__ import annotations

from aiohttp import web

from holm.wire.actions import (
    Exec,
    ExecWhat,
    Glob,
    GlobWhat,
    Grep,
    GrepWhat,
    ListFiles,
    ReadFile,
    WriteFile,
    WriteWhat,
)
from holm.wire.api import PathQuery
from holm.wire.results import ExecResult, FileData, FileList, FileSaved, GlobResult, GrepResult

from ..routing import Route, act_response, body_of, query_of

BOX = "/v1/boxes/{id}"


async def run_exec(request: web.Request) -> web.Response:
    return await act_response(request, Exec(what=await body_of(request, ExecWhat)))


async def read_file(request: web.Request) -> web.Response:
    return await act_response(request, ReadFile(path=query_of(request, PathQuery).path))


async def write_file(request: web.Request) -> web.Response:
    return await act_response(request, WriteFile(what=await body_of(request, WriteWhat)))


async def list_files(request: web.Request) -> web.Response:
    return await act_response(request, ListFiles(path=query_of(request, PathQuery).path))


async def grep(request: web.Request) -> web.Response:
    return await act_response(request, Grep(what=await body_of(request, GrepWhat)))


async def glob(request: web.Request) -> web.Response:
    return await act_response(request, Glob(what=query_of(request, GlobWhat)))


ROUTES = [
    Route(
        "POST",
        f"{BOX}/exec",
        run_exec,
        "Run a command (at most 10 minutes)",
        body=ExecWhat,
        response=ExecResult,
    ),
    Route("GET", f"{BOX}/files", read_file, "Read a file", query=PathQuery, response=FileData),
    Route("PUT", f"{BOX}/files", write_file, "Write a file", body=WriteWhat, response=FileSaved),
    Route(
        "GET",
        f"{BOX}/files/list",
        list_files,
        "List a directory",
        query=PathQuery,
        response=FileList,
    ),
    Route("POST", f"{BOX}/files/grep", grep, "Search in files", body=GrepWhat, response=GrepResult),
    Route(
        "GET", f"{BOX}/files/glob", glob, "Find files by name", query=GlobWhat, response=GlobResult
    ),
]
