"""Pages end to end through holmd on real local boxes: a batch of page actions recorded as
`acted` and done again by a fork, the page routes, and the REST example of the reference."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
import pytest_asyncio
from http_kit import Client, error_of, ok_json, trace_entries
from local_kit import LocalServer, client_of, started
from page_kit import page, site_actions
from playwright.async_api import async_playwright

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

CONFIRM = {"x-holm-confirm-delete": "true"}
PORT = 8712
ADA_SITE = {
    "index.html": """<title>Sign up</title>
<form action="details.html">
  <label for="name">Name</label> <input id="name" name="name">
  <button>Continue</button>
</form>""",
    "details.html": """<title>Details</title><h1>Details</h1><p id="who"></p>
<script>who.textContent = new URLSearchParams(location.search).get("name");</script>""",
}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[LocalServer]:
    async with started(display_base=370, events_delay_ms=0) as running:
        yield running


def site_steps(files: dict[str, str], port: int) -> list[Any]:
    return [msgspec.to_builtins(step) for step in site_actions(files, port)]


async def batch(client: Client, box: str, actions: list[Any], **body: Any) -> Any:
    url = f"/v1/boxes/{box}/screens/0/actions"
    return await ok_json(await client.post(url, json={"actions": actions, **body}))


async def evaluate(client: Client, box: str, expression: str) -> Any:
    step = {"type": "evaluate", "what": {"expression": expression}}
    result = await batch(client, box, [step])
    assert result["results"][0]["ok"], result
    return result["results"][0]["value"]["value"]


async def test_the_ada_run_is_recorded_and_a_fork_lands_on_details(server: LocalServer) -> None:
    client = client_of(server)
    source = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    steps = [
        *site_steps(ADA_SITE, PORT),
        {"type": "open_url", "url": f"http://127.0.0.1:{PORT}/index.html", "label": "signup"},
        {"type": "on_page", "what": {"op": "fill", "query": "Name", "text": "Ada"}},
        {"type": "on_page", "what": {"op": "click", "query": "Continue"}},
        {"type": "on_page", "what": {"op": "wait_for", "query": "Details"}},
    ]
    result = await batch(client, source, steps)
    assert [r["ok"] for r in result["results"]] == [True] * len(steps), result["results"]
    filled, clicked, waited = (r["value"] for r in result["results"][-3:])
    assert filled["element"]["name"] == "Name" and filled["element"]["value"] == "Ada"
    assert clicked["element"]["role"] == "button" and clicked["navigated"]
    assert waited["url"] == f"http://127.0.0.1:{PORT}/details.html?name=Ada"
    assert [t["title"] for t in result["tabs"] if t.get("label") == "signup"] == ["Details"]

    acted = [e for e in await trace_entries(client, source) if e["kind"] == "acted"]
    pages = [e["action"] for e in acted if e["action"]["type"] == "on_page"]
    assert [p["what"]["op"] for p in pages] == ["fill", "click", "wait_for"]

    forked = await ok_json(await client.post(f"/v1/boxes/{source}/fork", json={}))
    new = forked["box"]["id"]
    assert forked["replay"]["ok"] == forked["replay"]["attempted"], forked["replay"]
    assert await evaluate(client, new, "document.querySelector('h1').textContent") == "Details"
    assert await evaluate(client, new, "who.textContent") == "Ada"
    for box in (source, new):
        await ok_json(await client.delete(f"/v1/boxes/{box}", headers=CONFIRM))


EXAMPLE_PORT = 8713
EXAMPLE_SITE = {
    "index.html": """<!doctype html><title>Example Domain</title>
<div><h1>Example Domain</h1>
<p>This domain is for use in illustrative examples in documents.</p>
<p><a href="/more.html">More information...</a></p></div>""",
    "more.html": "<title>More</title><h1>Example Domains</h1>",
}


async def test_the_rest_example_of_the_reference(server: LocalServer) -> None:
    client = client_of(server)
    created = await ok_json(
        await client.post(
            "/v1/boxes",
            json={
                "spec": {"desktop": {"width": 1280, "height": 800}},
                "placement": {"expires_after_secs": 3600},
            },
            headers={"idempotency-key": "create-demo-1"},
        )
    )
    box = created["id"]
    # The example's page, served inside the box (a box reaches no outside address).
    served = await batch(client, box, site_steps(EXAMPLE_SITE, EXAMPLE_PORT))
    assert all(r["ok"] for r in served["results"]), served
    result = await ok_json(
        await client.post(
            f"/v1/boxes/{box}/screens/0/actions",
            json={
                "actions": [
                    {"type": "open_url", "url": f"http://127.0.0.1:{EXAMPLE_PORT}/"},
                    {"type": "on_page", "what": {"op": "wait_for", "query": "Example Domain"}},
                    {"type": "on_page", "what": {"op": "click", "query": "More information"}},
                ],
                "want": ["frame"],
            },
        )
    )
    assert [r["ok"] for r in result["results"]] == [True, True, True], result["results"]
    clicked = result["results"][2]["value"]
    assert clicked["element"]["role"] == "link" and clicked["navigated"]
    assert clicked["url"] == f"http://127.0.0.1:{EXAMPLE_PORT}/more.html"
    assert result["frame"]["png_base64"] and result["frame"]["width"] == 1280
    assert [t["title"] for t in result["tabs"]][:1] == ["More"]
    deleted = await client.delete(f"/v1/boxes/{box}", headers=CONFIRM)
    assert deleted.status == 200


async def test_the_page_routes(server: LocalServer) -> None:
    client = client_of(server)
    box = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    await batch(client, box, site_steps(EXAMPLE_SITE, EXAMPLE_PORT + 1))
    url = f"http://127.0.0.1:{EXAMPLE_PORT + 1}/"
    opened = await batch(client, box, [{"type": "open_url", "url": url, "label": "ex"}])
    tab = opened["results"][0]["value"]["tab"]
    base = f"/v1/boxes/{box}"
    before = len(await trace_entries(client, box))

    tabs = await ok_json(await client.get(f"{base}/pages"))
    assert {"tab": tab, "title": "Example Domain", "url": url, "label": "ex"} in tabs["tabs"]
    page = await ok_json(await client.get(f"{base}/page", params={"tab": "ex"}))
    assert page["text"].startswith("# Example Domain") and page["title"] == "Example Domain"
    found = await ok_json(await client.get(f"{base}/page/find", params={"q": "link More"}))
    assert found["total"] == 1 and found["elements"][0]["name"] == "More information..."
    snap = await ok_json(await client.get(f"{base}/page/snapshot", params={"limit": "5"}))
    assert ("heading", "Example Domain") in [(c["role"], c["name"]) for c in snap["controls"]]
    value = await ok_json(
        await client.post(f"{base}/page/evaluate", json={"expression": "document.title"})
    )
    assert value == {"value": "Example Domain", "type": "string", "cut": False}
    missing = await client.post(f"{base}/page/element", json={"op": "click", "query": "Nope"})
    assert "'Nope'" in await error_of(missing, 404, "not_found")
    wrong = await client.post(f"{base}/page/element", json={"op": "clack", "query": "x"})
    await error_of(wrong, 400, "bad_request")
    clicked = await ok_json(
        await client.post(f"{base}/page/element", json={"op": "click", "query": "More information"})
    )
    assert clicked["navigated"] and clicked["url"].endswith("/more.html")
    shot = await ok_json(await client.post(f"{base}/page/screenshot", json={}))
    assert base64_png(shot["data_base64"])
    pdf = await ok_json(await client.post(f"{base}/page/pdf", json={"path": "/tmp/p.pdf"}))
    assert pdf["path"] == "/tmp/p.pdf" and pdf["size"] > 0
    assert (await ok_json(await client.post(f"{base}/pages/ex/focus")))["tab"] == tab
    assert (await ok_json(await client.delete(f"{base}/pages/{tab}")))["closed"]

    # Only the screenshot and the PDF are recorded, as page_captured; never the picture.
    after = (await trace_entries(client, box))[before:]
    captured = [e for e in after if e["kind"] == "page_captured"]
    assert [(e["format"], e.get("path")) for e in captured] == [
        ("png", None),
        ("pdf", "/tmp/p.pdf"),
    ]
    assert all(e["kind"] in ("page_captured", "frame") for e in after), after
    await ok_json(await client.delete(f"/v1/boxes/{box}", headers=CONFIRM))


def base64_png(data: str) -> bool:
    import base64

    return base64.b64decode(data).startswith(b"\x89PNG")


async def test_cookies_through_their_routes_only_and_never_recorded(server: LocalServer) -> None:
    client = client_of(server)
    box = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    base = f"/v1/boxes/{box}/cookies"
    url = "http://cookies.test/"
    before = len(await trace_entries(client, box))
    jar = {"url": url, "cookies": [{"name": "sid", "value": "s3cret", "same_site": "Lax"}]}
    assert (await ok_json(await client.post(base, json=jar)))["changed"] == 1
    listed = await ok_json(await client.get(base, params={"url": url}))
    assert [(c["name"], c["value"]) for c in listed["cookies"]] == [("sid", "s3cret")]
    step = {"type": "cookies", "what": {"do": "set", "url": url, "cookies": jar["cookies"]}}
    refused = await client.post(f"/v1/boxes/{box}/screens/0/actions", json={"actions": [step]})
    assert "never in a batch" in await error_of(refused, 400, "bad_request")
    assert (await ok_json(await client.delete(base)))["changed"] >= 1
    assert (await ok_json(await client.get(base, params={"url": url})))["cookies"] == []
    # Neither the routes nor the refused batch leave anything but frames in the trace.
    after = (await trace_entries(client, box))[before:]
    assert all(e["kind"] == "frame" for e in after), after
    await ok_json(await client.delete(f"/v1/boxes/{box}", headers=CONFIRM))


async def test_a_devtools_address_relays_to_the_box_until_it_expires(
    server: LocalServer,
) -> None:
    client = client_of(server)
    box = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    await batch(client, box, [{"type": "open_url", "url": page("<title>Relayed</title>")}])
    address = await ok_json(await client.post(f"/v1/boxes/{box}/cdp"))
    host = f"{client.host}:{client.port}"
    prefix = address["url"].removeprefix(f"http://{host}")
    assert prefix.startswith("/v1/cdp/") and address["ws_url"].startswith(f"ws://{host}/v1/cdp/")
    # No bearer token: the address is the credential.
    version = await client.get(f"{prefix}/json/version", headers={"authorization": ""})
    assert version.status == 200 and "Chrome" in (await version.json())["Browser"]
    # rest-api.md: "any" method of `…/json…` is relayed; the box's Chromium answers it.
    for method in ("POST", "DELETE", "PATCH"):
        url = f"{prefix}/json/version"
        other = await client.request(method, url, headers={"authorization": ""})
        assert other.status == 200 and "Chrome" in (await other.json())["Browser"], method
    targets = await ok_json(await client.get(f"{prefix}/json/list"))
    relayed = next(t for t in targets if t.get("title") == "Relayed")
    ws_path = relayed["webSocketDebuggerUrl"].removeprefix(f"ws://{host}")
    assert ws_path.startswith(prefix + "/devtools/page/")
    async with client.ws_connect(ws_path) as ws:
        await ws.send_json(
            {"id": 1, "method": "Runtime.evaluate", "params": {"expression": "document.title"}}
        )
        answer = await ws.receive_json()
        assert answer["result"]["result"]["value"] == "Relayed"
    await error_of(await client.get("/v1/cdp/not-a-token/json/version"), 401, "denied")
    # Playwright's own client, as a user's tool would use the address.
    async with async_playwright() as playwright:
        browser = await playwright.chromium.connect_over_cdp(address["url"])
        titles = [await p.title() for c in browser.contexts for p in c.pages]
        assert "Relayed" in titles
        # Only the client disconnects: the box's Chromium goes on.
        await browser.close()
    assert (await client.get(f"{prefix}/json/version")).status == 200

    short = await ok_json(await client.post(f"/v1/boxes/{box}/cdp", params={"ttl_secs": "1"}))
    short_prefix = short["url"].removeprefix(f"http://{host}")

    async def expired() -> bool:
        return (await client.get(f"{short_prefix}/json/version")).status == 401

    assert await until(expired, tries=50, pause=0.1)
    too_long = await client.post(f"/v1/boxes/{box}/cdp", params={"ttl_secs": "86401"})
    await error_of(too_long, 400, "bad_request")
    await ok_json(await client.delete(f"/v1/boxes/{box}", headers=CONFIRM))


async def until(check: Any, tries: int, pause: float) -> Any:
    """Poll `check()` (bounded) until it gives something true (a state, not a timing)."""
    import asyncio

    for _ in range(tries):
        if found := await check():
            return found
        await asyncio.sleep(pause)
    return await check()


async def test_a_browser_state_saved_in_one_box_loads_in_another(server: LocalServer) -> None:
    client = client_of(server)
    port = EXAMPLE_PORT + 2
    origin = f"http://127.0.0.1:{port}"
    boxes = [(await ok_json(await client.post("/v1/boxes", json={})))["id"] for _ in range(2)]
    for box in boxes:
        await batch(client, box, site_steps(EXAMPLE_SITE, port))
    first, second = boxes
    await batch(client, first, [{"type": "open_url", "url": origin + "/"}])
    await evaluate(client, first, "localStorage.setItem('theme', 'dark')")
    jar = {"url": origin, "cookies": [{"name": "sid", "value": "s3cret"}]}
    await ok_json(await client.post(f"/v1/boxes/{first}/cookies", json=jar))
    before = len(await trace_entries(client, first))

    saved = await ok_json(await client.post(f"/v1/boxes/{first}/state/save", json={}))
    assert (saved["cookies"], saved["origins"]) >= (1, 1)
    state = saved["session_json"]
    assert "s3cret" in state and "dark" in state
    body = {"session_json": state}
    loaded = await ok_json(await client.post(f"/v1/boxes/{second}/state/load", json=body))
    assert loaded["cookies"] >= 1 and loaded["origins"] >= 1

    cookies = await ok_json(await client.get(f"/v1/boxes/{second}/cookies", params={"url": origin}))
    assert [(c["name"], c["value"]) for c in cookies["cookies"]] == [("sid", "s3cret")]
    await batch(client, second, [{"type": "open_url", "url": origin + "/"}])
    assert await evaluate(client, second, "localStorage.getItem('theme')") == "dark"
    # The state went to the caller only: nothing of it is in either trace.
    after = (await trace_entries(client, first))[before:]
    assert "s3cret" not in repr(after) and all(e["kind"] == "frame" for e in after)
    assert "s3cret" not in repr(await trace_entries(client, second))
    for box in boxes:
        await ok_json(await client.delete(f"/v1/boxes/{box}", headers=CONFIRM))


async def test_a_named_state_is_kept_by_the_server(server: LocalServer) -> None:
    client = client_of(server)
    port = EXAMPLE_PORT + 3
    origin = f"http://127.0.0.1:{port}"
    boxes = [(await ok_json(await client.post("/v1/boxes", json={})))["id"] for _ in range(2)]
    first, second = boxes
    await batch(client, first, site_steps(EXAMPLE_SITE, port))
    jar = {"url": origin, "cookies": [{"name": "sid", "value": "s3cret"}]}
    await ok_json(await client.post(f"/v1/boxes/{first}/cookies", json=jar))

    save = f"/v1/boxes/{first}/state/save"
    saved = await ok_json(await client.post(save, json={"name": "work"}))
    assert saved == {"cookies": 1, "origins": 0, "name": "work"}
    listed = (await ok_json(await client.get("/v1/states")))["states"]
    assert [(s["name"], s["box"], s["cookies"]) for s in listed] == [("work", first, 1)]
    # Kept in the state dir, private to the server, and in no trace.
    kept = server.state_dir / "browser-states" / "server" / "work.json"
    assert "s3cret" in kept.read_text() and kept.stat().st_mode & 0o777 == 0o600
    assert "s3cret" not in repr(await trace_entries(client, first))

    load = f"/v1/boxes/{second}/state/load"
    loaded = await ok_json(await client.post(load, json={"name": "work"}))
    assert loaded == {"cookies": 1, "origins": 0}
    cookies = await ok_json(await client.get(f"/v1/boxes/{second}/cookies", params={"url": origin}))
    assert [(c["name"], c["value"]) for c in cookies["cookies"]] == [("sid", "s3cret")]

    await error_of(await client.post(load, json={"name": "play"}), 404, "not_found")
    both = {"name": "work", "session_json": "{}"}
    await error_of(await client.post(load, json=both), 400, "bad_request")
    await error_of(await client.post(load, json={}), 400, "bad_request")
    await error_of(await client.post(save, json={"name": "../x"}), 400, "bad_request")
    removed = await ok_json(await client.delete("/v1/states/work"))
    assert removed == {"name": "work", "removed": True}
    assert not kept.exists() and (await ok_json(await client.get("/v1/states")))["states"] == []
    for box in boxes:
        await ok_json(await client.delete(f"/v1/boxes/{box}", headers=CONFIRM))


# A page that keeps its sign-in in IndexedDB: a store with a key path, one with an index
# and out-of-line keys.
SIGN_IN_SITE = {
    "index.html": """<title>Sign in</title><p id="who">…</p><script>
const open = () => new Promise((ok, no) => {
  const r = indexedDB.open("auth", 3);
  r.onupgradeneeded = () => {
    r.result.createObjectStore("session", {keyPath: "user"});
    r.result.createObjectStore("visits", {autoIncrement: true}).createIndex("by_day", "day");
  };
  r.onsuccess = () => ok(r.result); r.onerror = () => no(r.error);
});
const done = r => new Promise((ok, no) => { r.onsuccess = () => ok(r.result); r.onerror = no; });
window.signIn = async user => {
  const db = await open(), tx = db.transaction(["session", "visits"], "readwrite");
  tx.objectStore("session").put({user, token: "t0k3n", since: 1790000000000});
  tx.objectStore("visits").put({day: "monday"});
  await new Promise(ok => tx.oncomplete = ok);
  db.close();
};
window.whoami = async () => {
  const db = await open(), tx = db.transaction(["session", "visits"]);
  const [me] = await done(tx.objectStore("session").getAll());
  const days = await done(tx.objectStore("visits").index("by_day").getAllKeys("monday"));
  db.close();
  return me ? `${me.user} (${me.token}), ${days.length} visit` : "signed out";
};
</script>""",
}


async def test_a_sign_in_kept_in_indexed_db_is_saved_and_loaded(server: LocalServer) -> None:
    client = client_of(server)
    port = EXAMPLE_PORT + 4
    origin = f"http://127.0.0.1:{port}"
    box = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    await batch(client, box, [*site_steps(SIGN_IN_SITE, port), {"type": "open_url", "url": origin}])
    await evaluate(client, box, "signIn('ada')")
    assert await evaluate(client, box, "whoami()") == "ada (t0k3n), 1 visit"

    without = await ok_json(await client.post(f"/v1/boxes/{box}/state/save", json={}))
    assert "indexedDB" not in without["session_json"]
    saved = await ok_json(
        await client.post(f"/v1/boxes/{box}/state/save", json={"indexed_db": True})
    )
    state = msgspec.json.decode(saved["session_json"])
    (entry,) = [o for o in state["origins"] if o["origin"] == origin]
    (auth,) = entry["indexedDB"]
    assert (auth["name"], auth["version"]) == ("auth", 3)
    stores = {s["name"]: s for s in auth["stores"]}
    assert stores["session"]["keyPath"] == "user"
    assert stores["session"]["records"] == [
        {"value": {"user": "ada", "token": "t0k3n", "since": 1790000000000}}
    ]
    assert stores["visits"]["records"] == [{"key": 1, "value": {"day": "monday"}}]
    assert stores["visits"]["indexes"] == [
        {"name": "by_day", "keyPath": "day", "multiEntry": False, "unique": False}
    ]

    # Signed out (the database gone), then signed in again by the loaded state.
    gone = "new Promise(ok => { const r = indexedDB.deleteDatabase('auth'); r.onsuccess = ok; })"
    await evaluate(client, box, gone)
    await batch(client, box, [{"type": "open_url", "url": origin}])
    assert await evaluate(client, box, "whoami()") == "signed out"
    await evaluate(client, box, gone)
    body = {"session_json": saved["session_json"]}
    loaded = await ok_json(await client.post(f"/v1/boxes/{box}/state/load", json=body))
    assert loaded["origins"] >= 1
    await batch(client, box, [{"type": "open_url", "url": origin}])
    assert await evaluate(client, box, "whoami()") == "ada (t0k3n), 1 visit"
    # The token went to the caller only.
    assert "t0k3n" not in repr(await trace_entries(client, box))
    await ok_json(await client.delete(f"/v1/boxes/{box}", headers=CONFIRM))


SECRET_PAGE = "data:text/html,<title>sign in</title><input id=user autofocus><input id=pass>"
SECRET = "pa55-Word-7e1d"


async def test_secrets_by_name_reach_the_page_and_nothing_else(server: LocalServer) -> None:
    """The page gets a `type` and a `fill` given by secret name; the trace, the state dir
    and every answer hold the names; a fork given the value types it again."""
    client = client_of(server)
    source = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    steps = [
        {"type": "open_url", "url": SECRET_PAGE},
        {"type": "type", "secret": "USER"},
        {"type": "on_page", "what": {"op": "fill", "query": "#pass", "secret": "PASS"}},
    ]
    answer = await batch(client, source, steps, secrets={"USER": "ada", "PASS": SECRET})
    assert all(step["ok"] for step in answer["results"]), answer
    values = "[user.value, pass.value]"
    read = f"/v1/boxes/{source}/page/evaluate"
    page_values = await ok_json(await client.post(read, json={"expression": values}))
    assert page_values["value"] == ["ada", SECRET]
    forked = await ok_json(
        await client.post(
            f"/v1/boxes/{source}/fork", json={"secrets": {"USER": "ada", "PASS": SECRET}}
        )
    )
    fork = forked["box"]["id"]
    read = f"/v1/boxes/{fork}/page/evaluate"
    assert (await ok_json(await client.post(read, json={"expression": values})))["value"] == [
        "ada",
        SECRET,
    ]
    kept = b"".join(
        [
            await (await client.get(f"/v1/boxes/{box}/trace")).read()
            + await (await client.get(f"/v1/boxes/{box}/trace/view")).read()
            for box in (source, fork)
        ]
    )
    assert SECRET.encode() not in kept
    assert b'"secret":"PASS"' in kept
    # Everything the server keeps (the store's traces, blobs and frames, its keys); the
    # boxes' own folders hold what a box's programs wrote, which is the box's.
    boxes = server.state_dir / "boxes"
    on_disk = [
        p
        for p in server.state_dir.rglob("*")
        if p.is_file() and boxes not in p.parents and SECRET.encode() in p.read_bytes()
    ]
    assert on_disk == []
    for box in (source, fork):
        await client.delete(f"/v1/boxes/{box}", headers=CONFIRM)
