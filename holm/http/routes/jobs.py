"""Scheduled work, for a server whose loops are off (`HOLM_SERVER_SCHEDULE=external`): each
route takes GET and POST, with the server token or `CRON_SECRET` as the bearer token."""

from __future__ import annotations

from aiohttp import web

from holm.wire.api import PruneResult, ReapResult, RunResult

from ..routing import Handler, Route, engine_of, json_response


async def reap(request: web.Request) -> web.Response:
    return json_response(ReapResult(removed=await engine_of(request).reap()))


async def prune(request: web.Request) -> web.Response:
    return json_response(await engine_of(request).prune())


async def run(request: web.Request) -> web.Response:
    return json_response(RunResult(ran=await engine_of(request).run_jobs()))


_JOBS: list[tuple[str, Handler, str, type]] = [
    ("reap", reap, "Remove the boxes past their deadline", ReapResult),
    ("prune", prune, "Remove old frames, trace entries and events", PruneResult),
    ("run", run, "Do the queued launches and forks (takes none after 50 s)", RunResult),
]

ROUTES = [
    Route(method, f"/v1/jobs/{name}", handler, summary, response=response, auth="cron")
    for name, handler, summary, response in _JOBS
    for method in ("GET", "POST")
]
