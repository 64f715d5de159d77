"""`holm image` against a real holmd (in this process, on a free loopback port) whose
docker runtime has the session's image built: build is a cache hit that prints the image
(inline, and waited for when the server queues its jobs), ls lists it, and rm of an unknown
digest exits with not_found's code."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import msgspec
import pytest
from aiohttp.test_utils import TestServer
from click.testing import CliRunner, Result
from runtime_kit import SESSION_SPEC

from holm.cli import main
from holm.cli.remote import EXIT_CODES
from holm.config import load_config
from holm.http.app import create_app
from holm.wire.api import ImageInfo

from .conftest import MakeRuntime

pytestmark = pytest.mark.docker

Holm = Callable[..., Awaitable[Result]]


@pytest.fixture(params=["inline", "queue"])
async def holm(
    request: pytest.FixtureRequest, make_runtime: MakeRuntime, tmp_path: Path
) -> AsyncIterator[Holm]:
    # No token: the CLI is given only `--url`; the server listens on loopback.
    config = load_config(
        {}, state_dir=tmp_path, jobs=request.param, events_delay_ms=0, server_auth="none"
    )
    server = TestServer(create_app(config, runtimes={"docker": make_runtime()}), host="127.0.0.1")
    await server.start_server()
    url = str(server.make_url("")).rstrip("/")

    async def run(*args: str) -> Result:
        return await asyncio.to_thread(CliRunner().invoke, main, [*args, "--url", url])

    yield run
    await server.close()


async def test_build_ls_and_rm(holm: Holm, session_image: ImageInfo, tmp_path: Path) -> None:
    spec_file = tmp_path / "spec.json"
    spec_file.write_bytes(msgspec.json.encode(SESSION_SPEC))
    built = await holm("image", "build", "--spec", str(spec_file))
    assert built.exit_code == 0, built.stderr
    assert built.stdout.strip() == session_image.image
    assert "built in" in built.stderr

    listed = await holm("image", "ls", "--json")
    assert listed.exit_code == 0, listed.stderr
    assert session_image.digest in {image["digest"] for image in json.loads(listed.stdout)}

    missing = await holm("image", "rm", "0" * 32)
    assert missing.exit_code == EXIT_CODES["not_found"]
    assert "not_found" in missing.stderr
