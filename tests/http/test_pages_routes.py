"""The page, cookie, state and DevTools routes on the in-memory double: each runs its one
action and answers its result; what each records; what a batch refuses."""

from __future__ import annotations

from http_kit import Client, error_of, ok_json, trace_entries
from page_kit import page

FORM = page("<title>Form</title><label for=n>Name</label><input id=n><button>Continue</button>")


async def test_the_page_routes_answer_their_results(client: Client) -> None:
    box = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    base = f"/v1/boxes/{box}"
    step = {"type": "open_url", "url": FORM, "label": "form"}
    opened = await ok_json(await client.post(f"{base}/screens/0/actions", json={"actions": [step]}))
    assert [t["label"] for t in opened["tabs"] if "label" in t] == ["form"]
    before = len(await trace_entries(client, box))

    tabs = await ok_json(await client.get(f"{base}/pages"))
    assert tabs["tabs"][0]["title"] == "Form"
    found = await ok_json(await client.get(f"{base}/page/find", params={"q": "Continue"}))
    assert found["total"] == 1
    fill = {"op": "fill", "query": "Name", "text": "Ada"}
    filled = await ok_json(await client.post(f"{base}/page/element?tab=form", json=fill))
    assert filled["element"]["value"] == "Ada" and filled["changed"][0]["value"] == "Ada"
    missing = await client.post(f"{base}/page/element", json={"op": "click", "query": "Nope"})
    assert "'Nope'" in await error_of(missing, 404, "not_found")
    read = await ok_json(await client.get(f"{base}/page", params={"format": "text"}))
    assert "Continue" in read["text"]
    shot = await ok_json(await client.post(f"{base}/page/screenshot", json={}))
    assert shot["data_base64"]
    console = await ok_json(await client.post(f"{base}/page/console", json={}))
    assert console == {"messages": [], "cut": False}
    after = (await trace_entries(client, box))[before:]
    assert [e["kind"] for e in after if e["kind"] != "frame"] == ["page_captured"]


async def test_secrets_stay_out_of_batches_and_traces(client: Client) -> None:
    box = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    base = f"/v1/boxes/{box}"
    jar = {"url": "http://a.test/", "cookies": [{"name": "sid", "value": "s3cret"}]}
    assert (await ok_json(await client.post(f"{base}/cookies", json=jar)))["changed"] == 1
    saved = await ok_json(await client.post(f"{base}/state/save", json={}))
    assert "s3cret" in saved["session_json"]
    for step in (
        {"type": "cookies", "what": {"do": "get"}},
        {"type": "state_save"},
        {"type": "state_load", "what": {"session_json": saved["session_json"]}},
    ):
        refused = await client.post(f"{base}/screens/0/actions", json={"actions": [step]})
        assert "never in a batch" in await error_of(refused, 400, "bad_request")
    assert "s3cret" not in repr(await trace_entries(client, box))
    # The memory double has no browser to relay.
    await error_of(await client.post(f"{base}/cdp"), 400, "unsupported")
