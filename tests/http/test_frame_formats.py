"""Frames in the format a model wants, through HTTP on a real local box (Chromium on a
1280×800 Xvfb screen): `GET …/frame` and a batch's `want: ["frame"]` answer PNG, JPEG or
WebP, each a picture of the screen's size; the hash stays the pixels' whatever the format;
a bad format or quality is a 400 with the error body, and a refused batch does nothing; an
unchanged frame answered by the server itself ends when the page draws on its own."""

from __future__ import annotations

import asyncio
import base64
import io
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from http_kit import Client, error_of, ok_json, trace_entries
from local_kit import LocalServer, client_of, new_box, started
from PIL import Image

from holm.engine import still_screens

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

# A page with nothing that moves (no caret, no animation): its frames stay the same.
STILL_PAGE = "data:text/html,<body style='background:%23fff'><h1>still</h1><p>text</p></body>"
PIL_FORMATS = {"png": "PNG", "jpeg": "JPEG", "webp": "WEBP"}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[LocalServer]:
    async with started() as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def box(server: LocalServer) -> str:
    box_id = await new_box(server)
    steps = [{"type": "open_url", "url": STILL_PAGE}, {"type": "wait_still", "settle_ms": 500}]
    await batch(client_of(server), box_id, {"actions": steps})
    return box_id


async def batch(client: Client, box: str, body: dict[str, Any]) -> Any:
    return await ok_json(await client.post(f"/v1/boxes/{box}/screens/0/actions", json=body))


def picture(frame: dict[str, Any]) -> Image.Image:
    """The frame's picture, from the field its format goes in; the other is absent."""
    fmt = frame.get("format", "png")
    field, other = (
        ("png_base64", "image_base64") if fmt == "png" else ("image_base64", "png_base64")
    )
    assert other not in frame
    image = Image.open(io.BytesIO(base64.b64decode(frame[field])))
    image.load()
    assert image.format == PIL_FORMATS[fmt]
    return image


@pytest.mark.parametrize(
    ("query", "fmt"),
    [
        ("", "png"),
        ("?format=png", "png"),
        ("?format=jpeg", "jpeg"),
        ("?format=webp&quality=60", "webp"),
    ],
)
async def test_each_format_is_a_picture_of_the_screen(
    server: LocalServer, box: str, query: str, fmt: str
) -> None:
    frame = await ok_json(await client_of(server).get(f"/v1/boxes/{box}/screens/0/frame{query}"))
    # PNG answers as the spec has it, with no `format` key.
    assert frame.get("format") == (None if fmt == "png" else fmt)
    assert picture(frame).size == (frame["width"], frame["height"]) == (1280, 800)


async def test_a_scaled_region_in_jpeg(server: LocalServer, box: str) -> None:
    got = await client_of(server).get(
        f"/v1/boxes/{box}/screens/0/frame?x=0&y=0&width=640&height=400&scale=50&format=jpeg"
    )
    assert picture(await ok_json(got)).size == (320, 200)


async def test_quality_trades_bytes_for_fidelity(server: LocalServer, box: str) -> None:
    client = client_of(server)
    base = f"/v1/boxes/{box}/screens/0/frame"
    for fmt in ("jpeg", "webp"):
        low = await ok_json(await client.get(f"{base}?format={fmt}&quality=5"))
        high = await ok_json(await client.get(f"{base}?format={fmt}&quality=95"))
        assert len(low["image_base64"]) < len(high["image_base64"]), fmt


async def test_the_hash_is_the_pixels_whatever_the_format(server: LocalServer, box: str) -> None:
    client = client_of(server)
    base = f"/v1/boxes/{box}/screens/0/frame"
    png = await ok_json(await client.get(base))
    for fmt in ("jpeg", "webp"):
        again = await ok_json(await client.get(f"{base}?format={fmt}&have={png['hash']}"))
        assert again == {"hash": png["hash"], "unchanged": True, "width": 1280, "height": 800}


async def test_a_batch_answers_its_frame_in_the_format_asked(server: LocalServer, box: str) -> None:
    client = client_of(server)
    body = {"actions": [{"type": "move", "to": {"x": 5, "y": 5}}], "want": ["frame"]}
    webp = await batch(client, box, {**body, "frame_format": "webp", "frame_quality": 50})
    assert webp["frame"]["format"] == "webp"
    assert picture(webp["frame"]).size == (1280, 800)
    jpeg = await batch(client, box, {**body, "frame_format": "jpeg"})
    assert picture(jpeg["frame"]).size == (1280, 800)
    # The trace records the steps as ever, and keeps its frames as PNG.
    entries = await trace_entries(client, box)
    frames = [e for e in entries if e["kind"] == "frame"]
    response = await client.get(f"/v1/boxes/{box}/trace/frames/{frames[-1]['frame']}")
    assert response.content_type == "image/png"
    assert Image.open(io.BytesIO(await response.read())).format == "PNG"


@pytest.mark.parametrize(
    ("query", "complaint"),
    [
        ("format=gif", "format"),
        ("format=JPEG", "format"),
        ("format=jpeg&quality=0", "quality"),
        ("format=webp&quality=101", "quality"),
        ("format=jpeg&quality=high", "quality"),
        ("quality=50", "png is lossless"),
        ("format=png&quality=50", "png is lossless"),
    ],
)
async def test_a_bad_format_or_quality_is_refused(
    server: LocalServer, box: str, query: str, complaint: str
) -> None:
    response = await client_of(server).get(f"/v1/boxes/{box}/screens/0/frame?{query}")
    assert complaint in await error_of(response, 400, "bad_request")


@pytest.mark.parametrize(
    "extra",
    [{"frame_format": "bmp"}, {"frame_format": "jpeg", "frame_quality": 500}, {"frame_quality": 9}],
)
async def test_a_batch_with_a_bad_frame_format_does_nothing(
    server: LocalServer, box: str, extra: dict[str, Any]
) -> None:
    client = client_of(server)
    before = len(await trace_entries(client, box))
    body = {"actions": [{"type": "type", "text": "x"}], "want": ["frame"], **extra}
    response = await client.post(f"/v1/boxes/{box}/screens/0/actions", json=body)
    await error_of(response, 400, "bad_request")
    assert not [e for e in (await trace_entries(client, box))[before:] if e["kind"] == "acted"]


# A page that draws on its own, once, a while after it loads.
LATE_PAGE = (
    "data:text/html,<body style='background:%23fff'><h1>soon red</h1><script>"
    "setTimeout(() => document.body.style.background = '%23c00', 2000)</script></body>"
)


async def test_an_unchanged_frame_ends_when_the_page_draws_on_its_own(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Known-still screens are believed as long as the box says nothing: only the box's
    # word of its drawing can end it here (holm/engine/still_screens.py).
    monkeypatch.setattr(still_screens, "KEEP_MS", 600_000)
    client = client_of(server)
    box = await new_box(server)
    try:
        steps = [{"type": "open_url", "url": LATE_PAGE}, {"type": "wait_still", "settle_ms": 300}]
        await batch(client, box, {"actions": steps})
        url = f"/v1/boxes/{box}/screens/0/frame"
        first = await ok_json(await client.get(url))
        for _ in range(300):
            frame = await ok_json(await client.get(url, params={"have": first["hash"]}))
            if not frame["unchanged"]:
                break
            await asyncio.sleep(0.05)
        assert not frame["unchanged"] and frame["hash"] != first["hash"]
        assert picture(frame).convert("RGB").getpixel((640, 600)) == (0xCC, 0, 0)
    finally:
        await client.delete(f"/v1/boxes/{box}", headers={"x-holm-confirm-delete": "true"})
