"""The one exception tree of holm. Each class carries its API `code`, HTTP status and
whether the same request can succeed later.

    HolmError
     ├── BadRequest          400 bad_request
     ├── Unsupported         400 unsupported
     ├── NotFound            404 not_found
     ├── Gone                410 gone
     ├── Denied              409 denied
     ├── ScreenUnavailable   409 screen_unavailable
     ├── Failed              422 failed
     ├── Transport           502 transport
     ├── Unavailable         503 unavailable
     ├── Timeout             504 timeout
     └── Internal            500 internal

Lower-layer errors (OS, X11, docker, the agent's socket) are mapped to these at the adapter
boundary; nothing else reaches a client.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec


class ErrorBody(msgspec.Struct, forbid_unknown_fields=True):
    """The body of every error response, and of a failed step in a trace."""

    code: str
    message: str
    retryable: bool = False


class HolmError(Exception):
    code: ClassVar[str] = "internal"
    status: ClassVar[int] = 500
    retryable_default: ClassVar[bool] = False

    def __init__(self, message: str, *, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = self.retryable_default if retryable is None else retryable

    def body(self) -> ErrorBody:
        return ErrorBody(code=self.code, message=self.message, retryable=self.retryable)

    @staticmethod
    def from_body(body: ErrorBody) -> HolmError:
        cls = ERRORS_BY_CODE.get(body.code, Internal)
        return cls(body.message, retryable=body.retryable)


class BadRequest(HolmError):
    code = "bad_request"
    status = 400


class Unsupported(HolmError):
    code = "unsupported"
    status = 400


class NotFound(HolmError):
    code = "not_found"
    status = 404


class Gone(HolmError):
    code = "gone"
    status = 410


class Denied(HolmError):
    code = "denied"
    status = 409
    retryable_default = True


class BadCredential(Denied):
    """A ticket or token in a URL (a viewer ticket, a DevTools address) that is wrong or
    expired: 401, without a bearer challenge, since the credential is no header."""

    status = 401
    retryable_default = False


class ScreenUnavailable(HolmError):
    code = "screen_unavailable"
    status = 409
    retryable_default = True


class Failed(HolmError):
    code = "failed"
    status = 422


class Transport(HolmError):
    code = "transport"
    status = 502
    retryable_default = True


class Unavailable(HolmError):
    code = "unavailable"
    status = 503
    retryable_default = True


class ServerUnreachable(Unavailable):
    """No answer from holmd at all (refused, reset, DNS): not an answer with an error. The
    client raises it; it lives here so that the CLI tells it apart without importing the
    client (aiohttp) first."""


class Timeout(HolmError):
    code = "timeout"
    status = 504
    retryable_default = True


class Internal(HolmError):
    code = "internal"
    status = 500


ERRORS_BY_CODE: dict[str, type[HolmError]] = {
    cls.code: cls
    for cls in (
        BadRequest,
        Unsupported,
        NotFound,
        Gone,
        Denied,
        ScreenUnavailable,
        Failed,
        Transport,
        Unavailable,
        Timeout,
        Internal,
    )
}

__all__ = [
    "ERRORS_BY_CODE",
    "BadRequest",
    "Denied",
    "ErrorBody",
    "Failed",
    "Gone",
    "HolmError",
    "Internal",
    "NotFound",
    "ScreenUnavailable",
    "ServerUnreachable",
    "Timeout",
    "Transport",
    "Unavailable",
    "Unsupported",
]
