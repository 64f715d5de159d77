"""The grant a served trace page's "fork from here" button sends (holm/http/page_grants.py):
made with the page, never the caller's token; good for a fork of that box with `up_to`
alone and for the viewer tickets of the boxes it forked, as the caller who read the page;
refused everywhere else, once expired, and once the key the page was read with is gone.
A page asked for as a file (`fork=false`, what `holm trace view BOX` writes) has none."""

from __future__ import annotations

import html
import re
from typing import Any

from http_kit import Client, MakeClient, error_of, ok_json, trace_entries

from holm.http.page_grants import GRANT_SECS, PAGE_GRANTS

TOKEN = "tok-0123456789"
SERVER = {"Authorization": f"Bearer {TOKEN}"}


def bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


async def source(client: Client, headers: dict[str, str]) -> tuple[str, int]:
    """A box that ran two commands; and the seq of the first."""
    box = str((await ok_json(await client.post("/v1/boxes", json={}, headers=headers)))["id"])
    seqs = []
    for word in ("one", "two"):
        body = {"argv": ["echo", word]}
        await ok_json(await client.post(f"/v1/boxes/{box}/exec", json=body, headers=headers))
        seqs.append(max(e["seq"] for e in await entries_of(client, box, headers)))
    return box, seqs[0]


async def entries_of(client: Client, box: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    """The trace (one page: these traces are short)."""
    page = await ok_json(await client.get(f"/v1/boxes/{box}/trace", headers=headers))
    entries: list[dict[str, Any]] = page["entries"]
    return entries


async def served(client: Client, box: str, headers: dict[str, str], query: str = "") -> Any:
    page = await client.get(f"/v1/boxes/{box}/trace/view{query}", headers=headers)
    assert page.status == 200 and page.content_type == "text/html"
    return page


def grant_of(text: str) -> str:
    (found,) = re.findall(r'<div id="fork" data-box="[^"]+" data-grant="([^"]+)"', text)
    return html.unescape(found)


async def test_the_served_page_carries_a_grant_for_its_fork_and_not_the_token(
    make_client: MakeClient,
) -> None:
    client = await make_client(server_token=TOKEN)
    box, first = await source(client, SERVER)
    page = await served(client, box, SERVER)
    text = await page.text()
    grant = grant_of(text)
    assert grant.startswith("pg_") and TOKEN not in text
    # The page may call its own server now (the fork, the ticket), nothing else; the
    # header and the page's own copy of the policy say the same.
    policy = page.headers["Content-Security-Policy"]
    assert policy.endswith("; connect-src 'self'") and "default-src 'none'" in policy
    assert f'content="{policy}"' in text
    assert page.headers["Referrer-Policy"] == "no-referrer"
    assert '<button type="button">Fork from here</button>' in text

    # A page asked for as a file has no button, no grant, and calls nothing.
    kept = await served(client, box, SERVER, "?fork=false")
    assert 'id="fork"' not in await kept.text()
    assert "connect-src" not in kept.headers["Content-Security-Policy"]

    # Anything but the fork of its box is refused as a wrong token.
    for method, path, body in (
        ("GET", "/v1/boxes", None),
        ("GET", f"/v1/boxes/{box}/trace", None),
        ("POST", f"/v1/boxes/{box}/exec", {"argv": ["true"]}),
        ("POST", f"/v1/boxes/{box}/screens/0/viewer/ticket", {}),
    ):
        response = await client.request(method, path, json=body, headers=bearer(grant))
        assert "grant of a trace page" in await error_of(response, 401, "denied")
    other, _ = await source(client, SERVER)
    refused = await client.post(f"/v1/boxes/{other}/fork", json={}, headers=bearer(grant))
    await error_of(refused, 401, "denied")
    # The fork is the button's: `up_to` alone.
    for body in ({"up_to": first, "count": 2}, {"include_person": True}, {"placement": {}}):
        response = await client.post(f"/v1/boxes/{box}/fork", json=body, headers=bearer(grant))
        assert "up_to` alone" in await error_of(response, 403, "denied")

    forked = await ok_json(
        await client.post(f"/v1/boxes/{box}/fork", json={"up_to": first}, headers=bearer(grant))
    )
    fork = forked["box"]["id"]
    assert forked["box"]["forked_from"] == {"source": box, "up_to": first}
    entries = await entries_of(client, fork, SERVER)
    assert (entries[1]["kind"], entries[1]["up_to"]) == ("forked_from", first)
    # Now the fork's viewer ticket is the grant's too: the memory double has no viewer,
    # which says the grant was taken (a refused one would be 401).
    ticket = f"/v1/boxes/{fork}/screens/0/viewer/ticket"
    await error_of(await client.post(ticket, json={}, headers=bearer(grant)), 400, "unsupported")
    # To watch, not to drive.
    control = await client.post(ticket, json={"mode": "control"}, headers=bearer(grant))
    assert "view tickets only" in await error_of(control, 403, "denied")

    # Expired: refused like any wrong token.
    grants = client.app[PAGE_GRANTS]
    now = grants.clock()
    grants.clock = lambda: now + GRANT_SECS * 1000
    response = await client.post(f"/v1/boxes/{box}/fork", json={}, headers=bearer(grant))
    await error_of(response, 401, "denied")


async def test_a_workspace_s_page_forks_as_that_workspace_until_its_key_is_removed(
    make_client: MakeClient,
) -> None:
    client = await make_client(server_token=TOKEN)
    space = await ok_json(await client.post("/v1/workspaces", json={"name": "ada"}, headers=SERVER))
    made = await ok_json(
        await client.post("/v1/keys", json={"workspace": space["id"]}, headers=SERVER)
    )
    key = bearer(made["key"])
    box, first = await source(client, key)
    grant = grant_of(await (await served(client, box, key)).text())
    forked = await ok_json(
        await client.post(f"/v1/boxes/{box}/fork", json={"up_to": first}, headers=bearer(grant))
    )
    # The fork is the workspace's, as one its key asked for would be.
    assert forked["box"]["owner"] == space["id"]
    await ok_json(await client.get(f"/v1/boxes/{forked['box']['id']}", headers=key))

    await ok_json(await client.delete(f"/v1/keys/{made['id']}", headers=SERVER))
    response = await client.post(f"/v1/boxes/{box}/fork", json={}, headers=bearer(grant))
    assert "was removed" in await error_of(response, 401, "denied")


async def test_with_auth_off_the_page_still_forks_with_its_grant(client: Client) -> None:
    box, first = await source(client, {})
    grant = grant_of(await (await served(client, box, {})).text())
    forked = await ok_json(
        await client.post(f"/v1/boxes/{box}/fork", json={"up_to": first}, headers=bearer(grant))
    )
    assert forked["replay"]["attempted"] == 1
    assert [e["kind"] for e in await trace_entries(client, forked["box"]["id"])][:2] == [
        "box_created",
        "forked_from",
    ]
