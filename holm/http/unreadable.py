"""The answer to a request aiohttp cannot read: a request line or a header over its limit
(8190 bytes), a header it cannot parse, a method that is not one. aiohttp answers these
itself, in its HTTP protocol, before any route or middleware sees a request, and in
`text/plain`; holmd gives them the error body every other answer has.

The hook is `RequestHandler.handle_error`, where aiohttp writes that answer: `Runner` is the
`web.AppRunner` whose server makes each connection's handler a `_Connection`. holmd and the
in-process test server run the app with it.
"""

from __future__ import annotations

import logging
from http import HTTPStatus

from aiohttp import web
from aiohttp.http_exceptions import LineTooLong
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from holm.errors import BadRequest, HolmError, Internal

from .routing import json_response

log = logging.getLogger(__name__)


class _Connection(RequestHandler):
    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        error: HolmError
        if 400 <= status < 500:
            # The client's fault: a line, not aiohttp's traceback at ERROR.
            if request.writer.output_size > 0:
                raise ConnectionError("an answer was sent already; the connection is broken")
            error = BadRequest(_unreadable(status, exc, message))
            log.info("a request from %s cannot be read: %s", request.remote, error.message)
        else:
            # aiohttp's own logs the fault, and refuses when an answer has begun.
            super().handle_error(request, status, exc, message)
            error = Internal(f"a server error: {status} {HTTPStatus(status).phrase}")
        response = json_response(error.body(), status)
        response.force_close()
        return response


def _unreadable(status: int, exc: BaseException | None, message: str | None) -> str:
    if isinstance(exc, LineTooLong):
        # Its message quotes the start of the line as Python bytes; the limit says more.
        return f"the request line or a header is longer than {exc.args[1]} bytes"
    return f"the request cannot be read: {message or HTTPStatus(status).phrase}"


class _Server(web.Server):
    def __call__(self) -> RequestHandler:
        return _Connection(self, loop=self._loop, **self._kwargs)


class Runner(web.AppRunner):
    """An `AppRunner` whose connections answer an unreadable request with the error body."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        # The server aiohttp made for the app, its settings kept; only the handler it
        # makes for each connection is ours (a subclass adds no state).
        server.__class__ = _Server
        return server


__all__ = ["Runner"]
