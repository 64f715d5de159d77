"""The computer-use formats of models on a real local box, through holmd: every action of
Anthropic's and OpenAI's computer tools, as the model emits it, read back from what a page
saw (clicks with their counts and modifiers, a drag over three calls, a scroll of 50 pixels,
typed text, the keys), the screenshot at the size the model was told, and a fork of the box
that ends on the same page state."""

from __future__ import annotations

import asyncio
import base64
import io
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from http_kit import Client, error_of, ok_json, trace_entries
from key_kit import KEYS_PAGE, TABLE
from local_kit import LocalServer, client_of, started
from page_kit import page
from PIL import Image

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

# The page keeps what it saw: clicks (kind, detail, button, modifiers), where buttons went
# down and up (in page pixels), the keys, the input's text and how far it is scrolled.
# Everything sits still on the screen (position: fixed) however the page is scrolled.
PAGE = page("""<!doctype html><title>cu</title>
<body style="margin:0;height:20000px">
<input id="box" style="position:fixed;left:40px;top:40px;width:400px;height:30px">
<p id="para" style="position:fixed;left:40px;top:120px;width:400px;margin:0">one two three</p>
<div id="pad" style="position:fixed;left:500px;top:200px;width:500px;height:300px"></div>
<script>
window.seen = {clicks: [], downs: [], ups: [], keys: []};
const mods = e => (e.shiftKey ? 'S' : '') + (e.ctrlKey ? 'C' : '') + (e.altKey ? 'A' : '') +
  (e.metaKey ? 'M' : '');
for (const kind of ['click', 'dblclick', 'auxclick'])
  document.addEventListener(kind, e => seen.clicks.push([kind, e.detail, e.button, mods(e)]));
document.addEventListener('mousedown', e => seen.downs.push([e.clientX, e.clientY, e.button]));
document.addEventListener('mouseup', e => {
  seen.ups.push([e.clientX, e.clientY, e.button]);
  if (e.button > 2) e.preventDefault();
});
document.addEventListener('keydown', e => seen.keys.push([e.key, e.code, mods(e)]));
document.addEventListener('contextmenu', e => e.preventDefault());
</script>""")

STATE = """({value: document.getElementById('box').value, scrollY, clicks: seen.clicks,
  downs: seen.downs, ups: seen.ups, keys: seen.keys})"""
# The screen is 1280×800; the model is told 1024×640 (Anthropic's docs scale to about XGA).
TOLD = {"display_width": 1024, "display_height": 640}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[LocalServer]:
    async with started(display_base=580, events_delay_ms=0) as running:
        yield running


async def _batch(client: Client, box: str, steps: list[dict[str, Any]]) -> Any:
    url = f"/v1/boxes/{box}/screens/0/actions"
    return await ok_json(await client.post(url, json={"actions": steps}))


async def _evaluate(client: Client, box: str, expression: str) -> Any:
    # The page route records nothing: a fork does not do these reads again.
    got = await client.post(f"/v1/boxes/{box}/page/evaluate", json={"expression": expression})
    return (await ok_json(got))["value"]


async def _settled(client: Client, box: str, expression: str = STATE) -> Any:
    """The value once two reads 100 ms apart agree (a page takes input a moment after the
    step answered)."""
    value = None
    for _ in range(50):
        await asyncio.sleep(0.1)
        now = await _evaluate(client, box, expression)
        if now == value:
            return now
        value = now
    return value


async def _anthropic(client: Client, box: str, action: dict[str, Any], **query: Any) -> Any:
    url = f"/v1/boxes/{box}/screens/0/computer/anthropic"
    return await ok_json(await client.post(url, json=action, params={**TOLD, **query}))


async def _openai(client: Client, box: str, action: dict[str, Any]) -> Any:
    return await ok_json(
        await client.post(f"/v1/boxes/{box}/screens/0/computer/openai", json=action)
    )


def _image(block: dict[str, Any]) -> Image.Image:
    assert block["type"] == "image" and block["source"]["type"] == "base64"
    return Image.open(io.BytesIO(base64.b64decode(block["source"]["data"])))


async def _page_box(client: Client) -> tuple[str, tuple[int, int]]:
    """A box with the page open, and where the page's (0, 0) is on the screen."""
    box = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    await _batch(client, box, [{"type": "open_url", "url": PAGE}])
    origin = await _evaluate(client, box, "[screenX, screenY + outerHeight - innerHeight]")
    return box, (int(origin[0]), int(origin[1]))


def _told(origin: tuple[int, int], x: float, y: float) -> list[float]:
    """A page point as the model sees it: on a 1024×640 picture of the 1280×800 screen."""
    return [(origin[0] + x) * 0.8, (origin[1] + y) * 0.8]


async def test_anthropic_actions_reach_the_page_and_a_fork_ends_the_same(
    server: LocalServer,
) -> None:
    client = client_of(server)
    box, origin = await _page_box(client)

    shot = await _anthropic(client, box, {"action": "screenshot"})
    assert (shot["display_width"], shot["display_height"]) == (1024, 640)
    assert _image(shot["content"][0]).size == (1024, 640) and "steps" not in shot

    # A click with a fraction (rounded on the screen), text typed into the focused input.
    field = _told(origin, 100.3, 55.6)
    clicked = await _anthropic(client, box, {"action": "left_click", "coordinate": field})
    assert [s["type"] for s in clicked["steps"]] == ["click"] and not clicked.get("is_error")
    assert _image(clicked["content"][-1]).size == (1024, 640)
    await _anthropic(client, box, {"action": "type", "text": "Hi there"})
    await _anthropic(client, box, {"action": "key", "text": "ctrl+a"})
    await _anthropic(client, box, {"action": "key", "text": "End"})
    await _anthropic(client, box, {"action": "key", "text": "shift+Home BackSpace"})
    await _anthropic(client, box, {"action": "type", "text": "Ada"})
    para = _told(origin, 60, 128)
    await _anthropic(client, box, {"action": "triple_click", "coordinate": para})
    pad = _told(origin, 700, 300)
    await _anthropic(client, box, {"action": "double_click", "coordinate": pad, "text": "shift"})
    await _anthropic(client, box, {"action": "right_click", "coordinate": pad, "text": "ctrl"})
    await _anthropic(client, box, {"action": "middle_click", "coordinate": pad})
    # A drag over three calls: down, a move, up, each its own request (and model turn).
    await _anthropic(client, box, {"action": "mouse_move", "coordinate": _told(origin, 550, 250)})
    held = await _anthropic(client, box, {"action": "left_mouse_down"})
    assert [s["type"] for s in held["steps"]] == ["mouse_down"]
    await _anthropic(client, box, {"action": "mouse_move", "coordinate": _told(origin, 650, 350)})
    await _anthropic(client, box, {"action": "left_mouse_up"})
    drag = {
        "action": "left_click_drag",
        "start_coordinate": _told(origin, 600, 400),
        "coordinate": _told(origin, 900, 450),
    }
    await _anthropic(client, box, drag)
    await _anthropic(client, box, {"action": "hold_key", "text": "shift", "duration": 0.2})
    await _anthropic(client, box, {"action": "wait", "duration": 0.1})
    scroll = {
        "action": "scroll",
        "coordinate": pad,
        "scroll_direction": "down",
        "scroll_amount": 2,
    }
    await _anthropic(client, box, scroll)
    where = await _anthropic(client, box, {"action": "cursor_position"})
    assert where["content"] == [{"type": "text", "text": f"X={round(pad[0])},Y={round(pad[1])}"}]
    zoom = {"action": "zoom", "region": [0, 0, 512, 320]}
    zoomed = await _anthropic(client, box, zoom)
    # The region at the screen's own resolution: 640×400 of its pixels.
    assert _image(zoomed["content"][0]).size == (640, 400)

    seen = await _settled(client, box)
    assert seen["value"] == "Ada"
    assert seen["scrollY"] == 240
    assert [c for c in seen["clicks"] if c[0] != "click" or c[1] == 3] == [
        # The triple click: its second click is a double click too.
        ["dblclick", 2, 0, ""],
        ["click", 3, 0, ""],
        ["dblclick", 2, 0, "S"],
        ["auxclick", 1, 2, "C"],
        ["auxclick", 1, 1, ""],
    ]
    # Page pixels: the model's coordinates scaled up to the screen, less the page's origin.
    assert seen["downs"][-2:] == [[550, 250, 0], [600, 400, 0]]
    assert seen["ups"][-2:] == [[650, 350, 0], [900, 450, 0]]
    # The keys of `key` and `hold_key` (shift last); Backspace came after shift+Home.
    assert seen["keys"][-1] == ["Shift", "ShiftLeft", "S"]
    assert ["Home", "Home", "S"] in seen["keys"] and ["Backspace", "Backspace", ""] in seen["keys"]

    acted = [e["action"]["type"] for e in await trace_entries(client, box) if e["kind"] == "acted"]
    assert {"click", "type", "press", "mouse_down", "move", "mouse_up", "drag", "scroll"} <= set(
        acted
    )
    forked = await ok_json(await client.post(f"/v1/boxes/{box}/fork", json={}))
    assert forked["replay"]["ok"] == forked["replay"]["attempted"], forked["replay"]
    again = await _settled(client, forked["box"]["id"])
    assert {k: again[k] for k in ("value", "scrollY", "clicks", "downs", "ups")} == {
        k: seen[k] for k in ("value", "scrollY", "clicks", "downs", "ups")
    }


async def test_openai_actions_reach_the_page_and_a_fork_ends_the_same(
    server: LocalServer,
) -> None:
    client = client_of(server)
    box, (left, top) = await _page_box(client)

    def at(x: int, y: int) -> dict[str, int]:
        return {"x": left + x, "y": top + y}

    shot = await _openai(client, box, {"type": "screenshot"})
    url = shot["output"]["image_url"]
    assert shot["output"]["type"] == "computer_screenshot" and url.startswith("data:image/png")
    picture = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert picture.size == (1280, 800)

    await _openai(client, box, {"type": "click", "button": "left", **at(100, 55)})
    await _openai(client, box, {"type": "type", "text": "abc"})
    await _openai(client, box, {"type": "keypress", "keys": ["CTRL", "A"]})
    await _openai(client, box, {"type": "keypress", "keys": ["ArrowRight"]})
    await _openai(client, box, {"type": "keypress", "keys": ["Backspace"]})
    await _openai(client, box, {"type": "type", "text": "Z"})
    await _openai(client, box, {"type": "double_click", **at(700, 300)})
    await _openai(client, box, {"type": "click", "button": "wheel", **at(700, 300)})
    await _openai(
        client, box, {"type": "click", "button": "right", "keys": ["SHIFT"], **at(700, 300)}
    )
    await _openai(client, box, {"type": "click", "button": "back", **at(700, 300)})
    path = [at(550, 250), at(600, 300), at(650, 350)]
    await _openai(client, box, {"type": "drag", "path": path})
    await _openai(client, box, {"type": "move", **at(800, 400)})
    await _openai(client, box, {"type": "scroll", "scroll_x": 0, "scroll_y": 50, **at(700, 300)})
    waited = await _openai(client, box, {"type": "wait"})
    assert [s["type"] for s in waited["steps"]] == ["wait"]
    # A call of several actions (OpenAI's newer tool): one batch, one screenshot.
    several = {"actions": [{"type": "move", **at(810, 410)}, {"type": "wait"}]}
    both = await _openai(client, box, several)
    assert [s["type"] for s in both["steps"]] == ["move", "wait"]
    assert both["output"]["image_url"].startswith("data:image/png;base64,")

    seen = await _settled(client, box)
    assert seen["value"] == "abZ"
    assert seen["scrollY"] == 50
    assert [c for c in seen["clicks"] if c[0] != "click"] == [
        ["dblclick", 2, 0, ""],
        ["auxclick", 1, 1, ""],
        ["auxclick", 1, 2, "S"],
        ["auxclick", 1, 3, ""],
    ]
    assert seen["downs"][-1] == [550, 250, 0] and seen["ups"][-1] == [650, 350, 0]
    assert ["a", "KeyA", "C"] in seen["keys"] and ["ArrowRight", "ArrowRight", ""] in seen["keys"]

    forked = await ok_json(await client.post(f"/v1/boxes/{box}/fork", json={}))
    assert forked["replay"]["ok"] == forked["replay"]["attempted"], forked["replay"]
    again = await _settled(client, forked["box"]["id"])
    assert {k: again[k] for k in ("value", "scrollY", "clicks", "downs", "ups")} == {
        k: seen[k] for k in ("value", "scrollY", "clicks", "downs", "ups")
    }


async def test_what_a_model_cannot_send_is_refused_whole(server: LocalServer) -> None:
    client = client_of(server)
    box = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    before = await _steps_of(client, box)
    anthropic = f"/v1/boxes/{box}/screens/0/computer/anthropic"
    for body, says in (
        ({"action": "fly"}, "fly"),
        ({"action": "mouse_move"}, "coordinate"),
        ({"action": "left_click", "coordinate": [1, 2], "text": "q"}, "no modifier"),
        ({"action": "key", "text": "Retrun"}, "unknown key"),
        ({"action": "wait", "duration": 400}, "at most"),
        ({"action": "left_click", "coordinate": [1, 2], "extra": 1}, "extra"),
    ):
        assert says in await error_of(await client.post(anthropic, json=body), 400, "bad_request")
    openai = f"/v1/boxes/{box}/screens/0/computer/openai"
    refused = await client.post(openai, json={"type": "drag", "path": [{"x": 1, "y": 1}]})
    await error_of(refused, 400, "bad_request")
    half = await client.post(anthropic, json={"action": "screenshot"}, params={"display_width": 9})
    await error_of(half, 400, "bad_request")
    assert await _steps_of(client, box) == before


async def _steps_of(client: Client, box: str) -> list[dict[str, Any]]:
    """The box's trace but its frames: the frame watcher records the screen of a new box
    a moment after it is ready (in CI, after the refusals began), and a frame that a step
    recorded comes with the step's own entry."""
    return [e for e in await trace_entries(client, box) if e["kind"] != "frame"]


async def _last_keydown(client: Client, box: str) -> list[str] | None:
    keys = await _settled(client, box, "window.keys")
    return keys[-1] if keys else None


async def test_each_key_name_reaches_the_page_through_rest_and_both_formats(
    server: LocalServer,
) -> None:
    client = client_of(server)
    box = (await ok_json(await client.post("/v1/boxes", json={})))["id"]
    await _batch(client, box, [{"type": "open_url", "url": page(KEYS_PAGE)}])
    await _batch(client, box, [{"type": "click", "at": {"x": 1100, "y": 700}}])
    ways = {
        "batch": lambda name: _batch(client, box, [{"type": "press", "chord": name}]),
        "anthropic": lambda name: _anthropic(client, box, {"action": "key", "text": name}),
        "openai": lambda name: _openai(client, box, {"type": "keypress", "keys": name.split("+")}),
    }
    for way, send in ways.items():
        seen: dict[str, list[str] | None] = {}
        for name, _ in TABLE:
            await _evaluate(client, box, "window.keys = []")
            await send(name)
            seen[name] = await _last_keydown(client, box)
        assert seen == {name: list(want) for name, want in TABLE}, way


async def test_caps_lock_does_not_change_typed_text(server: LocalServer) -> None:
    client = client_of(server)
    box, origin = await _page_box(client)
    field = _told(origin, 100, 55)
    await _anthropic(client, box, {"action": "left_click", "coordinate": field})
    await _anthropic(client, box, {"action": "key", "text": "CapsLock"})
    await _anthropic(client, box, {"action": "type", "text": "abc XYZ"})
    await _openai(client, box, {"type": "type", "text": " q"})
    assert (await _settled(client, box))["value"] == "abc XYZ q"
    # Caps Lock is still on for what comes after: a key pressed is a capital.
    await _anthropic(client, box, {"action": "key", "text": "w"})
    assert (await _settled(client, box))["value"] == "abc XYZ qW"
