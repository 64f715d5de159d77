"""Native widgets on a real local box (bubblewrap, Xvfb, Chromium, the box's own AT-SPI bus),
through holmd's HTTP API: a GTK dialog's field found by its label and filled, the frame
showing it; Chromium's tree of a form page; what a batch's `on_node` records; a box without
the feature refused."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from click.testing import CliRunner, Result
from http_kit import error_of, ok_json, shot, shot_once_changed, trace_entries
from local_kit import LocalServer, client_of, started
from PIL import ImageChops

from holm.cli import main

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

# The X displays of this module (the machine is shared with other test runs).
DISPLAY_BASE = 530
DIALOG = ["zenity", "--forms", "--title=Who", "--add-entry=Name", "--add-entry=Street"]
# The applications, without their widgets.
TOP = {"op": "tree", "depth": 1}
FORM = (
    "data:text/html,<title>form</title><form>"
    "<label>Full name <input name=n></label><br>"
    "<label for=s>Street</label><input id=s><br>"
    "<select aria-label=Country><option>France</option></select>"
    "<button type=button>Send</button></form>"
)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[LocalServer]:
    async with started(display_base=DISPLAY_BASE, events_delay_ms=0) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def box(server: LocalServer) -> str:
    """A box of the default features (accessibility among them), with a GTK dialog as an
    app of its spec."""
    spec = {"apps": {"who": {"command": DIALOG, "window_class": "zenity"}}}
    created = await ok_json(await client_of(server).post("/v1/boxes", json={"spec": spec}))
    return str(created["id"])


async def steps(
    server: LocalServer, box: str, *actions: dict[str, Any], screen: int = 0
) -> list[Any]:
    body = {"actions": list(actions)}
    done = await ok_json(
        await client_of(server).post(f"/v1/boxes/{box}/screens/{screen}/actions", json=body)
    )
    assert done["stopped_at"] is None, done
    return list(done["results"])


async def node(server: LocalServer, box: str, what: dict[str, Any], screen: int = 0) -> Any:
    url = f"/v1/boxes/{box}/screens/{screen}/desktop/node"
    return await ok_json(await client_of(server).post(url, json=what))


def flat(nodes: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for n in nodes:
        yield n
        yield from flat(n.get("children", []))


async def test_find_names_a_gtk_field_by_its_label_and_set_fills_it(
    server: LocalServer, box: str
) -> None:
    await steps(server, box, {"type": "launch", "app": "who"})
    query = {"query": "Name", "role": "text", "app": "zenity"}

    found = await node(server, box, {"op": "find", "node": query})

    [field] = found["nodes"]
    assert (field["role"], field["name"], field["label"]) == ("text", "", "Name")
    assert field["value"] == "" and "editable" in field["states"]
    street = (await node(server, box, {"op": "find", "node": {**query, "query": "Street"}}))[
        "nodes"
    ][0]
    assert street["path"] != field["path"]
    client = client_of(server)
    before = await shot(client, box, field["bounds"])
    street_before = await shot(client, box, street["bounds"])

    done = await node(server, box, {"op": "set", "node": query, "value": "Ada Lovelace"})

    assert done["node"]["path"] == field["path"] and done["node"]["value"] == "Ada Lovelace"
    # The frame shows it: the field's pixels changed (once GTK has drawn it), the other
    # field's did not.
    after = await shot_once_changed(client, box, field["bounds"], before)
    assert ImageChops.difference(before, after).getbbox() is not None
    street_after = await shot(client, box, street["bounds"])
    assert ImageChops.difference(street_before, street_after).getbbox() is None
    # Its path names it again; the toolkit's own text is what was set.
    again = await node(server, box, {"op": "find", "node": {"path": field["path"]}})
    assert [n["value"] for n in again["nodes"]] == ["Ada Lovelace"]


async def test_a_batch_records_its_node_steps_and_the_route_records_nothing(
    server: LocalServer, box: str
) -> None:
    client = client_of(server)
    before = len(await trace_entries(client, box))
    street = {"query": "Street", "role": "text", "app": "zenity"}
    await node(server, box, {"op": "focus", "node": street})
    after_route = await trace_entries(client, box)
    assert [e for e in after_route[before:] if e["kind"] == "acted"] == []

    [done] = await steps(
        server, box, {"type": "on_node", "what": {"op": "set", "node": street, "value": "Main"}}
    )

    assert done["ok"] and done["value"]["node"]["value"] == "Main"
    acted = [e for e in (await trace_entries(client, box)) if e["kind"] == "acted"]
    assert acted[-1]["action"] == {
        "type": "on_node",
        "what": {"op": "set", "node": street, "value": "Main"},
    }
    assert acted[-1]["ok"] is True


async def test_invoke_does_a_named_action_and_refuses_an_unknown_one(
    server: LocalServer, box: str
) -> None:
    cancel = {"query": "Cancel", "role": "button", "app": "zenity"}
    message = await error_of(
        await client_of(server).post(
            f"/v1/boxes/{box}/screens/0/desktop/node",
            json={"op": "invoke", "node": cancel, "action": "fly"},
        ),
        400,
        "bad_request",
    )
    assert "click" in message

    done = await node(server, box, {"op": "invoke", "node": cancel, "action": "click"})

    assert done["action"] == "click"
    # The dialog ended with its button: its application leaves the bus.
    for _ in range(50):
        tree = await node(server, box, {"op": "tree", "depth": 1})
        if "zenity" not in [n["name"] for n in tree["nodes"]]:
            break
    assert "zenity" not in [n["name"] for n in tree["nodes"]]


async def test_the_tree_of_chromium_on_a_form_page_lists_its_fields(
    server: LocalServer, box: str
) -> None:
    await steps(server, box, {"type": "open_url", "url": FORM})

    tree = await node(server, box, {"op": "tree", "app": "chromium"})

    [app] = tree["nodes"]
    assert app["role"] == "application"
    widgets = {(n["role"], n["name"]) for n in flat(tree["nodes"])}
    assert {("entry", "Full name"), ("entry", "Street"), ("combo box", "Country")} <= widgets
    assert ("push button", "Send") in widgets
    found = await node(server, box, {"op": "find", "node": {"query": "Street", "role": "text"}})
    assert [(n["role"], n["name"]) for n in found["nodes"]][:1] == [("entry", "Street")]


async def test_set_types_into_a_page_field_that_takes_no_text_through_the_bus(
    server: LocalServer, box: str
) -> None:
    # Its own page, freshly loaded: the test does not lean on the one before it.
    await steps(server, box, {"type": "open_url", "url": FORM})
    street = {"query": "Street", "role": "text", "app": "chromium"}

    done = await node(server, box, {"op": "set", "node": street, "value": "Elm Row"})

    assert (done["node"]["name"], done["node"]["value"]) == ("Street", "Elm Row")
    assert "focused" in done["node"]["states"]
    [read] = await steps(
        server,
        box,
        {"type": "evaluate", "what": {"expression": "document.getElementById('s').value"}},
    )
    assert read["value"]["value"] == "Elm Row"


async def test_each_screen_lists_and_finds_the_widgets_of_its_own_applications_only(
    server: LocalServer,
) -> None:
    client = client_of(server)
    spec = {
        "desktop": {"screens": 2},
        "apps": {"who": {"command": DIALOG, "window_class": "zenity"}},
    }
    created = await ok_json(await client.post("/v1/boxes", json={"spec": spec}))
    two = str(created["id"])
    try:
        await steps(server, two, {"type": "open_url", "url": FORM}, screen=0)
        await steps(server, two, {"type": "launch", "app": "who"}, screen=1)

        apps = [
            [n["name"].casefold() for n in (await node(server, two, TOP, i))["nodes"]]
            for i in (0, 1)
        ]

        # Each screen has a Chromium of its own, and the dialog shows on the second only.
        assert apps[0].count("chromium") == 1 and "zenity" not in apps[0], apps
        assert apps[1].count("chromium") == 1 and "zenity" in apps[1], apps
        name = {"query": "Name", "role": "text", "app": "zenity"}
        missing = await client.post(
            f"/v1/boxes/{two}/screens/0/desktop/node", json={"op": "find", "node": name}
        )
        assert "zenity" in await error_of(missing, 404, "not_found")
        [field] = (await node(server, two, {"op": "find", "node": name}, 1))["nodes"]
        assert field["label"] == "Name" and field["path"].startswith("zenity/")
        page = {"query": "Street", "role": "text", "app": "chromium"}
        street = {"op": "find", "node": page}
        assert (await node(server, two, street, 1)).get("nodes", []) == []
        [page_field, *_] = (await node(server, two, street, 0))["nodes"]
        assert (page_field["name"], page_field["path"].split("/")[0]) == ("Street", "Chromium")
        # A path names a widget of its screen: the second screen's Chromium is `Chromium`
        # there too, not the box's second (`Chromium#2`).
        [other] = (await node(server, two, {**TOP, "app": "chromium"}, 1))["nodes"]
        assert other["path"] == "Chromium"
        again = await node(server, two, {"op": "find", "node": {"path": field["path"]}}, 1)
        assert [n["label"] for n in again["nodes"]] == ["Name"]
        done = await node(server, two, {"op": "set", "node": name, "value": "Ada"}, 1)
        assert done["node"]["value"] == "Ada"
    finally:
        await client.delete(f"/v1/boxes/{two}", headers={"x-holm-confirm-delete": "true"})


async def holm(server: LocalServer, *args: str) -> Result:
    """The `holm` command against the test server (in a thread: the server runs on this
    loop)."""
    url = str(client_of(server).make_url("")).rstrip("/")
    return await asyncio.to_thread(CliRunner().invoke, main, [*args, "--url", url])


async def test_holm_node_sets_a_dialog_field_and_finds_it_again(
    server: LocalServer, box: str
) -> None:
    await steps(server, box, {"type": "launch", "app": "who"})
    street = ["--role", "text", "--app", "zenity"]

    done = await holm(server, "node", box, "set", "Street", *street, "--value", "Elm Row")

    assert done.exit_code == 0, done.output
    assert done.stdout.startswith('set text "Street" = "Elm Row"  zenity/')
    found = await holm(server, "node", box, "find", "Street", *street, "--json")
    assert found.exit_code == 0, found.output
    [field] = json.loads(found.stdout)["nodes"]
    assert (field["label"], field["value"]) == ("Street", "Elm Row")
    missing = await holm(server, "node", box, "focus", "No such field", "--app", "zenity")
    assert missing.exit_code == 5 and "No such field" in missing.stderr
    # docs/cli.md: `find` lists what it found, none included.
    none = await holm(server, "node", box, "find", "No such field", "--app", "zenity")
    assert none.exit_code == 0, none.output
    assert none.stdout.split() == ["ROLE", "NAME", "VALUE", "BOUNDS", "PATH"]
    nothing = await holm(server, "node", box, "find", "No such field", "--json")
    assert json.loads(nothing.stdout)["nodes"] == []
    closed = await holm(server, "node", box, "invoke", "Cancel", "--role", "button")
    assert closed.exit_code == 0, closed.output


async def test_a_box_without_the_feature_refuses_native_widgets(server: LocalServer) -> None:
    client = client_of(server)
    spec = {"desktop": {"features": []}}
    created = await ok_json(await client.post("/v1/boxes", json={"spec": spec}))
    try:
        message = await error_of(
            await client.post(
                f"/v1/boxes/{created['id']}/screens/0/desktop/node",
                json={"op": "tree"},
            ),
            400,
            "unsupported",
        )
        assert "accessibility" in message
    finally:
        await client.delete(f"/v1/boxes/{created['id']}", headers={"x-holm-confirm-delete": "true"})
