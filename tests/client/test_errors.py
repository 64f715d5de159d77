"""How the client turns answers into exceptions, and where it finds the server."""

from __future__ import annotations

import socket
from pathlib import Path

import msgspec
import pytest

from holm.client import (
    DEFAULT_URL,
    HolmClient,
    ServerUnreachable,
    SyncHolmClient,
    error_from_response,
    server_token,
    server_url,
)
from holm.errors import (
    ERRORS_BY_CODE,
    BadRequest,
    ErrorBody,
    Gone,
    HolmError,
    Internal,
    NotFound,
    Unavailable,
)


@pytest.mark.parametrize("code", sorted(ERRORS_BY_CODE))
def test_an_error_body_is_raised_as_the_class_of_its_code(code: str) -> None:
    body = msgspec.json.encode(ErrorBody(code=code, message="why it failed", retryable=True))
    error = error_from_response(ERRORS_BY_CODE[code].status, body)
    assert type(error) is ERRORS_BY_CODE[code]
    assert error.message == "why it failed"
    assert error.retryable is True


def test_an_unknown_code_is_an_internal_error_with_its_message() -> None:
    body = b'{"code": "novel", "message": "from a newer server", "retryable": false}'
    error = error_from_response(500, body)
    assert type(error) is Internal
    assert error.message == "from a newer server"


@pytest.mark.parametrize(
    ("status", "expected"),
    [(404, NotFound), (410, Gone), (400, BadRequest), (503, Unavailable), (405, Internal)],
)
def test_an_answer_without_an_error_body_is_classed_by_its_status(
    status: int, expected: type[HolmError]
) -> None:
    error = error_from_response(status, b"<html>404: Not Found</html>")
    assert type(error) is expected
    assert f"HTTP {status}" in error.message
    assert "Not Found" in error.message


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_server_that_does_not_answer_is_unreachable() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    async with HolmClient(url) as client:
        with pytest.raises(ServerUnreachable) as caught:
            await client.health()
    assert caught.value.code == "unavailable"
    assert caught.value.retryable
    assert url in caught.value.message


def test_the_sync_client_raises_the_same_errors() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    with SyncHolmClient(url) as client, pytest.raises(ServerUnreachable):
        client.list_boxes()


@pytest.mark.parametrize(
    "url", ["foo", "ftp://127.0.0.1:9", "http://", "http://127.0.0.1:99999", "http://[::1"]
)
def test_a_url_that_names_no_http_server_is_a_bad_request_before_any_request(url: str) -> None:
    for client in (HolmClient, SyncHolmClient):
        with pytest.raises(BadRequest) as caught:
            client(url)
        assert repr(url.rstrip("/")) in caught.value.message


def test_the_url_comes_from_the_environment() -> None:
    assert server_url({}) == DEFAULT_URL
    assert server_url({"HOLM_SERVER_ADDR": "127.0.0.1:9000"}) == "http://127.0.0.1:9000"
    both = {"HOLM_SERVER_URL": "http://h:1/", "HOLM_SERVER_ADDR": "127.0.0.1:9000"}
    assert server_url(both) == "http://h:1"


def test_the_token_comes_from_the_argument_the_environment_then_the_token_file(
    tmp_path: Path,
) -> None:
    empty = {"HOLM_STATE_DIR": str(tmp_path / "none-here")}
    assert server_token(empty) is None
    assert server_token({**empty, "HOLM_SERVER_TOKEN": "s3cret"}) == "s3cret"
    (tmp_path / "token").write_text("from-the-file\n")
    kept = {"HOLM_STATE_DIR": str(tmp_path)}
    assert server_token(kept) == "from-the-file"
    assert server_token({**kept, "HOLM_SERVER_TOKEN": "s3cret"}) == "s3cret"
    for url in ("http://localhost:9000", "http://127.0.0.2:8080", "http://[::1]:8080"):
        assert server_token(kept, url=url) == "from-the-file"
    # The file's token opens the server on this machine: it is never sent elsewhere.
    for url in ("http://10.0.0.5:8080", "https://holm.example.com", "http://localhost.evil"):
        assert server_token(kept, url=url) is None
    assert server_token({**kept, "HOLM_SERVER_URL": "http://10.0.0.5:8080"}) is None
    # The client takes the file's token when given none, and an explicit one before all.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HOLM_STATE_DIR", str(tmp_path))
        env.delenv("HOLM_SERVER_TOKEN", raising=False)
        assert HolmClient("http://127.0.0.1:1").token == "from-the-file"
        assert HolmClient("http://127.0.0.1:1", "given").token == "given"
        env.setenv("HOLM_SERVER_TOKEN", "s3cret")
        assert HolmClient("http://127.0.0.1:1").token == "s3cret"
