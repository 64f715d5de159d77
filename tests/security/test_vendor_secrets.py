"""A runtime's secrets (docs/security.md, "Secrets of runtimes"): after adding a runtime,
changing its secret, using it and restarting the server, no secret's bytes are in any
answer, log line, event, trace entry or file of the state dir; a sealed secret does not
open on another runtime's record; and the raw stream relay a front server uses takes the
server's token only."""

from __future__ import annotations

import base64
import logging
import secrets
from pathlib import Path

import pytest
from aiohttp import ClientResponse
from http_kit import Client, ok_json
from vendor_kit import BACK_TOKEN, back_server, front_server, holm_vendor

from holm.secrets_box import KEY_FILE, SecretsBox, SecretsKeyError


class Seen:
    """Every answer's body a test got."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, response: ClientResponse) -> ClientResponse:
        self.bodies.append(await response.read())
        return response


def files_under(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}


async def test_no_secret_is_in_an_answer_a_log_an_event_a_trace_or_a_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    marker = "MARKER" + secrets.token_hex(8)
    first, second = f"{marker}-first", f"{marker}-second"
    seen = Seen()
    front_dir = tmp_path / "front"
    async with back_server(tmp_path / "back") as (_, url):
        async with front_server(front_dir, events_delay_ms=0, storage_backend="local") as front:
            body = holm_vendor("far", url, token=first)
            await ok_json(await seen(await front.post("/v1/runtimes", json=body)))
            patch = {"secrets": {"api_key": second, "other": BACK_TOKEN}}
            # A secret the provider does not take is refused, and said by name only.
            await seen(await front.patch("/v1/runtimes/far", json=patch))
            patch = {"secrets": {"api_key": second}}
            await ok_json(await seen(await front.patch("/v1/runtimes/far", json=patch)))
            # The back server refuses that key: its error names no secret either.
            placed = {"placement": {"runtime": "far"}}
            await seen(await front.post("/v1/boxes", json=placed))
            for path in ("/v1/runtimes", "/v1/runtimes/far", "/v1/events", "/v1/traces"):
                await seen(await front.get(path))
        async with front_server(front_dir, events_delay_ms=0, storage_backend="local") as again:
            await ok_json(await seen(await again.get("/v1/runtimes/far")))
            await seen(await again.get("/v1/events"))
            openapi = await seen(await again.get("/v1/openapi.json"))
            assert openapi.status == 200
    assert len(seen.bodies) >= 10
    for text in (marker, base64.b64encode(marker.encode()).decode()):
        assert not [b for b in seen.bodies if text.encode() in b]
        assert text not in caplog.text
        kept = files_under(front_dir)
        assert kept and not [path for path, data in kept.items() if text.encode() in data]
    # The key made at first start is the server's alone.
    assert (front_dir / KEY_FILE).stat().st_mode & 0o777 == 0o600


async def test_a_sealed_secret_opens_only_on_its_own_record() -> None:
    box = SecretsBox(secrets.token_bytes(32))
    sealed = box.seal(b"api-key", b"runtime:far")
    assert b"api-key" not in sealed
    assert box.open(sealed, b"runtime:far") == b"api-key"
    with pytest.raises(SecretsKeyError):
        box.open(sealed, b"runtime:near")
    with pytest.raises(SecretsKeyError):
        SecretsBox(secrets.token_bytes(32)).open(sealed, b"runtime:far")
    tampered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    with pytest.raises(SecretsKeyError):
        box.open(tampered, b"runtime:far")


async def test_the_stream_relay_takes_the_server_token_only(tmp_path: Path) -> None:
    async with back_server(tmp_path / "back") as (back, _):
        made = await back.post(
            "/v1/boxes", json={}, headers={"Authorization": f"Bearer {BACK_TOKEN}"}
        )
        box = (await ok_json(made))["id"]
        await refused(back, f"/v1/boxes/{box}/streams/agent", {}, 401)
        wrong = {"Authorization": "Bearer not-the-token"}
        await refused(back, f"/v1/boxes/{box}/streams/agent", wrong, 401)


async def refused(client: Client, path: str, headers: dict[str, str], status: int) -> None:
    answer = await client.get(path, headers={**headers, "Upgrade": "websocket"})
    assert answer.status == status, await answer.text()
