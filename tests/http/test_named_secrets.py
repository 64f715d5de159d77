"""Secrets by name (docs/api.md, "Secrets"): a step names a secret instead of giving its
value; the box gets the value, and nothing the server keeps or answers holds it: the
trace (entries, text, page), the events feed, the step's answer, the state dir. A name with
no value refuses the request, naming it; a fork asks for the value again."""

from __future__ import annotations

from pathlib import Path

from http_kit import Client, MakeClient, engine_of, error_of, new_box, ok_json, trace_entries

from holm.wire.actions import Type

# A value no test writes anywhere else: its bytes must turn up nowhere but in the box.
MARKER = "s3cr3t-M4RK3R-41c9"


async def everything_answered(client: Client, box: str) -> bytes:
    """What a reader of the server can get of a box's history, as bytes."""
    parts = [
        await (await client.get(f"/v1/boxes/{box}/trace")).read(),
        await (await client.get(f"/v1/boxes/{box}/trace/view")).read(),
        await (await client.get("/v1/events?after=0")).read(),
        await (await client.get("/v1/secrets")).read(),
    ]
    return b"\n".join(parts)


def files_hold(folder: Path, needle: bytes) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


async def test_a_typed_secret_is_kept_by_name_and_length(
    make_client: MakeClient, tmp_path: Path
) -> None:
    client = await make_client(store="local")
    box = await new_box(client)
    body = {
        "actions": [{"type": "type", "secret": "PASSWORD"}],
        "secrets": {"PASSWORD": MARKER},
    }
    answer = await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=body))
    # The box typed the value (the double counts what it was given to type).
    assert answer["results"][0]["value"] == {"typed": len(MARKER)}
    (acted,) = [e for e in await trace_entries(client, box) if e["kind"] == "acted"]
    assert acted["action"] == {"type": "type", "secret": "PASSWORD"}
    assert acted["bytes"] == len(MARKER)
    assert MARKER.encode() not in await everything_answered(client, box)
    assert files_hold(tmp_path, MARKER.encode()) == []


async def test_a_secret_of_the_workspace_is_sealed_and_never_shown(
    make_client: MakeClient, tmp_path: Path
) -> None:
    client = await make_client(store="local")
    put = await client.put("/v1/secrets/TOKEN", json={"value": MARKER})
    assert (await ok_json(put))["bytes"] == len(MARKER)
    listed = await ok_json(await client.get("/v1/secrets"))
    assert [(s["name"], s["bytes"]) for s in listed["secrets"]] == [("TOKEN", len(MARKER))]
    box = await new_box(client)
    steps = {"actions": [{"type": "type", "secret": "TOKEN"}]}
    answer = await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=steps))
    assert answer["results"][0]["value"] == {"typed": len(MARKER)}
    assert MARKER.encode() not in await everything_answered(client, box)
    assert files_hold(tmp_path, MARKER.encode()) == []
    await client.close()
    # A restarted server still has it (sealed on the server trace), and still shows none.
    again = await make_client(store="local")
    answer = await ok_json(await again.post(f"/v1/boxes/{box}/screens/0/actions", json=steps))
    assert answer["results"][0]["value"] == {"typed": len(MARKER)}
    removed = await again.delete("/v1/secrets/TOKEN")
    assert removed.status == 204
    refused = await again.post(f"/v1/boxes/{box}/screens/0/actions", json=steps)
    assert "TOKEN" in await error_of(refused, 400, "bad_request")


async def test_a_missing_secret_refuses_the_batch_before_any_step(client: Client) -> None:
    box = await new_box(client)
    body = {"actions": [{"type": "type", "text": "a"}, {"type": "type", "secret": "NOPE"}]}
    refused = await client.post(f"/v1/boxes/{box}/screens/0/actions", json=body)
    assert "NOPE" in await error_of(refused, 400, "bad_request")
    assert [e for e in await trace_entries(client, box) if e["kind"] == "acted"] == []


async def test_text_and_secret_together_are_refused(client: Client) -> None:
    box = await new_box(client)
    body = {"actions": [{"type": "type", "text": "a", "secret": "X"}], "secrets": {"X": "y"}}
    refused = await client.post(f"/v1/boxes/{box}/screens/0/actions", json=body)
    await error_of(refused, 400, "bad_request")


async def test_an_exec_argument_and_variable_by_name_are_recorded_by_name(
    make_client: MakeClient, tmp_path: Path
) -> None:
    client = await make_client(store="local")
    await ok_json(await client.put("/v1/secrets/API_KEY", json={"value": MARKER}))
    box = await new_box(client)
    body = {"argv": ["echo", {"secret": "API_KEY"}], "env": {"KEY": {"secret": "API_KEY"}}}
    answer = await ok_json(await client.post(f"/v1/boxes/{box}/exec", json=body))
    # The box got the value and echoed it; the answer shows it scrubbed.
    assert answer["code"] == 0 and MARKER not in answer["stdout"]
    assert answer["stdout"].strip() == "•••"
    (executed,) = [e for e in await trace_entries(client, box) if e["kind"] == "executed"]
    assert executed["argv"] == ["echo", {"secret": "API_KEY"}]
    assert executed["env"] == {"KEY": {"secret": "API_KEY"}}
    assert MARKER.encode() not in await everything_answered(client, box)
    assert files_hold(tmp_path, MARKER.encode()) == []


async def test_a_fork_asks_for_the_secret_by_name(client: Client) -> None:
    box = await new_box(client)
    body = {"actions": [{"type": "type", "secret": "PIN"}], "secrets": {"PIN": "1234"}}
    await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=body))
    refused = await client.post(f"/v1/boxes/{box}/fork", json={})
    assert "PIN" in await error_of(refused, 400, "bad_request")
    # No box was made for the refused fork.
    assert len((await ok_json(await client.get("/v1/boxes")))["boxes"]) == 1
    forked = await ok_json(
        await client.post(f"/v1/boxes/{box}/fork", json={"secrets": {"PIN": "1234"}})
    )
    assert forked["replay"]["ok"] == forked["replay"]["attempted"] == 1
    entries = await trace_entries(client, forked["box"]["id"])
    (acted,) = [e for e in entries if e["kind"] == "acted"]
    assert acted["action"] == {"type": "type", "secret": "PIN"} and acted["bytes"] == 4


async def test_a_person_s_text_is_sealed_or_not_kept(make_client: MakeClient) -> None:
    """What a person types through the control viewer (engine.record_person, which the
    relay calls): sealed under the trace's key by default, its length only with
    HOLM_RECORD_PERSON_TEXT=off; shown as dots either way."""
    for setting in ("encrypted", "off"):
        client = await make_client(record_person_text=setting)
        box = await new_box(client)
        await engine_of(client).record_person(box, 0, Type(text=MARKER))
        (acted,) = [e for e in await trace_entries(client, box) if e["kind"] == "acted"]
        assert (acted["actor"], acted["action"], acted["bytes"]) == (
            "person",
            {"type": "type"},
            len(MARKER),
        )
        assert (acted["sealed"] is not None) == (setting == "encrypted")
        assert MARKER.encode() not in await everything_answered(client, box)
        page = await (await client.get(f"/v1/boxes/{box}/trace/view")).text()
        assert "type •••" in page
        if setting == "encrypted":
            opened = await engine_of(client).person_text(box, acted["sealed"])
            assert opened == MARKER
            assert await engine_of(client).shred_trace(box)
            assert await engine_of(client).person_text(box, acted["sealed"]) is None
        await client.close()


async def test_bad_secret_and_variable_names_are_refused(client: Client) -> None:
    box = await new_box(client)
    for step in (
        {"type": "type", "secret": "no spaces"},
        {"type": "exec", "what": {"argv": ["true"], "env": {"A-B": "x"}}},
        {"type": "exec", "what": {"argv": [{"secret": "../x"}]}},
    ):
        refused = await client.post(f"/v1/boxes/{box}/screens/0/actions", json={"actions": [step]})
        await error_of(refused, 400, "bad_request")
    await error_of(await client.put("/v1/secrets/a%20b", json={"value": "x"}), 400, "bad_request")
