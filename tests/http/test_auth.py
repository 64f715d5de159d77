"""The bearer token: every route but health (and the token-in-URL ones) needs it; the
scheduled-work routes also take CRON_SECRET; a missing or wrong token answers 401 with the
error body (code `denied`). Without HOLM_SERVER_TOKEN the server makes one at first start
in its state dir; auth is off only when a setting says so, and then on loopback only."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest
from http_kit import MakeClient, app_config, error_of, ok_json

from holm.http.app import create_app, server_id_of

TOKEN = "tok-0123456789"
CRON = "cron-secret"


async def test_the_token_is_needed_except_for_health(make_client: MakeClient) -> None:
    client = await make_client(server_token=TOKEN)
    assert (await ok_json(await client.get("/v1/health")))["ok"] is True
    await ok_json(await client.get("/v1/openapi.json"))
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": TOKEN},
        {"Authorization": f"Basic {TOKEN}"},
    ):
        response = await client.get("/v1/boxes", headers=headers)
        assert "bearer token" in await error_of(response, 401, "denied")
        # RFC 9728: where the metadata of this resource is, which MCP clients look for.
        metadata = f"{client.make_url('/.well-known/oauth-protected-resource')}"
        challenge = f'Bearer resource_metadata="{metadata}"'
        assert response.headers["WWW-Authenticate"] == challenge
    # That metadata is served without a token: a bearer token in the header, and no
    # authorization server that could issue one.
    about = await ok_json(await client.get("/.well-known/oauth-protected-resource"))
    assert about == {
        "resource": str(client.make_url("")).rstrip("/"),
        "bearer_methods_supported": ["header"],
        "resource_name": "holm",
    }
    good = {"Authorization": f"Bearer {TOKEN}"}
    assert (await ok_json(await client.get("/v1/boxes", headers=good)))["boxes"] == []
    # The scheme is case-insensitive, as HTTP says.
    await ok_json(await client.get("/v1/boxes", headers={"Authorization": f"bearer {TOKEN}"}))


async def test_scheduled_work_takes_the_token_or_the_cron_secret(
    make_client: MakeClient,
) -> None:
    client = await make_client(server_token=TOKEN, cron_secret=CRON)
    for path in ("/v1/jobs/reap", "/v1/jobs/prune", "/v1/jobs/run"):
        for method in ("GET", "POST"):
            for token in (TOKEN, CRON):
                headers = {"Authorization": f"Bearer {token}"}
                await ok_json(await client.request(method, path, headers=headers))
            await error_of(await client.request(method, path), 401, "denied")
    # The cron secret opens nothing else.
    response = await client.get("/v1/boxes", headers={"Authorization": f"Bearer {CRON}"})
    await error_of(response, 401, "denied")


async def test_with_auth_off_the_server_is_open(make_client: MakeClient) -> None:
    client = await make_client(server_auth="none")
    await ok_json(await client.get("/v1/boxes"))
    await ok_json(await client.get("/v1/jobs/reap"))


async def test_with_auth_off_a_cron_secret_guards_only_the_jobs(
    make_client: MakeClient,
) -> None:
    client = await make_client(server_auth="none", cron_secret=CRON)
    await ok_json(await client.get("/v1/boxes"))
    await error_of(await client.get("/v1/jobs/reap"), 401, "denied")
    headers = {"Authorization": f"Bearer {CRON}"}
    await ok_json(await client.get("/v1/jobs/reap", headers=headers))


async def test_head_passes_the_same_guard_as_get(make_client: MakeClient) -> None:
    client = await make_client(server_token=TOKEN)
    assert (await client.head("/v1/health")).status == 200
    assert (await client.head("/v1/boxes")).status == 401
    good = {"Authorization": f"Bearer {TOKEN}"}
    assert (await client.head("/v1/boxes", headers=good)).status == 200


async def test_without_a_token_set_the_server_makes_one_and_keeps_it(
    make_client: MakeClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="holm.http.access"):
        client = await make_client(server_auth="token")
    token_file = tmp_path / "token"
    token = token_file.read_text().strip()
    assert len(token) >= 32
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    # The log says where the token is, never what it is.
    assert str(token_file.resolve()) in caplog.text
    assert token not in caplog.text
    await error_of(await client.get("/v1/boxes"), 401, "denied")
    await error_of(await client.get("/v1/jobs/reap"), 401, "denied")
    good = {"Authorization": f"Bearer {token}"}
    assert (await ok_json(await client.get("/v1/boxes", headers=good)))["boxes"] == []
    # A later start takes the same token.
    again = await make_client(server_auth="token")
    await ok_json(await again.get("/v1/boxes", headers=good))
    assert token_file.read_text().strip() == token


def test_the_state_dir_is_made_for_the_token(tmp_path: Path) -> None:
    state_dir = tmp_path / "memory-store" / "state"
    create_app(app_config(state_dir, server_auth="token"))
    assert (state_dir / "token").read_text().strip()
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700


def test_the_state_dir_is_private_with_a_token_given_too(tmp_path: Path) -> None:
    state_dir = tmp_path / "given-token"
    server_id_of(state_dir)
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700


async def test_a_token_file_others_could_read_is_made_private(
    make_client: MakeClient, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("kept-token-0123456789\n")
    token_file.chmod(0o644)
    client = await make_client(server_auth="token")
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    headers = {"Authorization": "Bearer kept-token-0123456789"}
    await ok_json(await client.get("/v1/boxes", headers=headers))


async def test_a_given_token_wins_and_no_file_is_made(
    make_client: MakeClient, tmp_path: Path
) -> None:
    client = await make_client(server_token=TOKEN)
    await ok_json(await client.get("/v1/boxes", headers={"Authorization": f"Bearer {TOKEN}"}))
    assert not (tmp_path / "token").exists()


@pytest.mark.parametrize("addr", ["0.0.0.0:8080", "192.0.2.1:8080", "[::]:8080", ":8080"])
def test_auth_off_is_refused_off_loopback(tmp_path: Path, addr: str) -> None:
    config = app_config(tmp_path, server_addr=addr)
    assert config.server_auth == "none"
    with pytest.raises(ValueError, match="loopback only"):
        create_app(config)


@pytest.mark.parametrize("addr", ["127.0.0.1:8080", "127.1.2.3:8080", "localhost:1", "[::1]:8080"])
def test_auth_off_is_allowed_on_loopback(tmp_path: Path, addr: str) -> None:
    create_app(app_config(tmp_path, server_addr=addr))


def test_auth_off_and_a_token_contradict(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="contradict"):
        create_app(app_config(tmp_path, server_auth="none", server_token=TOKEN))


def test_a_token_file_that_cannot_be_made_stops_the_start(tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the state dir should be")
    with pytest.raises(ValueError, match="cannot keep the server's token"):
        create_app(app_config(blocked / "state", server_auth="token"))
    assert os.listdir(tmp_path) == ["blocked"]
