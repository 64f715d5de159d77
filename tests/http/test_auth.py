"""The bearer token: every route but health (and the token-in-URL ones) needs it; the
scheduled-work routes also take CRON_SECRET; a missing or wrong token answers 401 with the
error body (code `denied`)."""

from __future__ import annotations

from http_kit import MakeClient, error_of, ok_json

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
        assert response.headers["WWW-Authenticate"] == "Bearer"
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


async def test_without_a_token_the_server_is_open(make_client: MakeClient) -> None:
    client = await make_client()
    await ok_json(await client.get("/v1/boxes"))
    await ok_json(await client.get("/v1/jobs/reap"))


async def test_a_cron_secret_alone_guards_only_the_jobs(make_client: MakeClient) -> None:
    client = await make_client(cron_secret=CRON)
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
