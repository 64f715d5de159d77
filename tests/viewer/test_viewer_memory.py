"""Tickets and viewer routes over the in-memory double (no real screens)."""

from __future__ import annotations

from http_kit import MakeClient, error_of, new_box


async def test_a_runtime_without_viewers_says_so(make_client: MakeClient) -> None:
    client = await make_client()
    box = await new_box(client)
    await error_of(
        await client.post(f"/v1/boxes/{box}/screens/0/viewer/ticket", json={}), 400, "unsupported"
    )
    await error_of(
        await client.post("/v1/boxes/box_none/screens/0/viewer/ticket", json={}), 404, "not_found"
    )
    await error_of(
        await client.post(f"/v1/boxes/{box}/screens/0/viewer/ticket", json={"mode": "drive"}),
        400,
        "bad_request",
    )


async def test_the_socket_wants_a_ticket_and_no_token(make_client: MakeClient) -> None:
    client = await make_client(server_token="s3cret")
    path = "/v1/boxes/box_x/screens/0/viewer/socket?ticket=nope"
    # Refused for the ticket, not for a missing bearer token: 401 with code denied.
    message = await error_of(await client.get(path), 401, "denied")
    assert "ticket" in message
