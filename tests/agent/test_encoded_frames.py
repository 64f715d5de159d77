"""A picture encoded once is not encoded again for the same pixels: a `Screen` of the agent
on a real Xvfb of its own (own_screen.py), its encodes counted. The hash is of the pixels
(and their size, scale and pointer), so the same hash in the same encoding is the same
picture; anything drawn, or another encoding, is encoded anew."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from PIL import Image, ImageChops, ImageStat
from Xlib.display import Display

from holm.agent.frames import capture
from holm.agent.x11.screen import Screen
from holm.wire.values import Encoding, Region

from .own_screen import display, painter, screen, window, x_pixels

__all__ = ["display", "painter", "screen"]  # fixtures

JPEG = Encoding("jpeg", 80)


@pytest.fixture
def encodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Encoding]]:
    """The encodings of every picture the screen encodes from its pixels."""
    seen: list[Encoding] = []
    encode = capture.encode

    def counted(raw: capture.Raw, scale: int, pointer: object, encoding: Encoding) -> bytes:
        seen.append(encoding)
        return encode(raw, scale, pointer, encoding)  # type: ignore[arg-type]

    monkeypatch.setattr(capture, "encode", counted)
    yield seen


def jpeg_pixels(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    assert image.format == "JPEG"
    return image.convert("RGB")


def close_to(one: Image.Image, other: Image.Image) -> bool:
    """Equal but for JPEG's loss: on average less than 4 levels apart in each channel (a
    window of another colour, or none, is far more)."""
    return all(mean < 4 for mean in ImageStat.Stat(ImageChops.difference(one, other)).mean)


async def test_a_still_screen_asked_again_is_not_encoded_again(
    screen: Screen, painter: Display, encodes: list[Encoding]
) -> None:
    window(painter, 20, 20, 200, 120, 0xFF0000)
    first = await screen.frame(encoding=JPEG)
    again = await screen.frame(encoding=JPEG)
    assert first.image is not None and again.image == first.image
    assert encodes == [JPEG]
    assert close_to(jpeg_pixels(first.image), x_pixels(painter))

    # Drawn on: encoded anew, and it shows what was drawn.
    window(painter, 300, 200, 100, 100, 0x0000FF)
    changed = await screen.frame(encoding=JPEG)
    assert changed.hash != first.hash and changed.image != first.image
    assert encodes == [JPEG, JPEG]
    assert changed.image is not None
    assert close_to(jpeg_pixels(changed.image), x_pixels(painter))


async def test_another_encoding_or_region_is_encoded_anew(
    screen: Screen, painter: Display, encodes: list[Encoding]
) -> None:
    window(painter, 20, 20, 200, 120, 0x00FF00)
    await screen.frame(encoding=JPEG)
    other = Encoding("jpeg", 30)
    lower = await screen.frame(encoding=other)
    webp = await screen.frame(encoding=Encoding("webp", 80))
    assert encodes == [JPEG, other, Encoding("webp", 80)]
    assert lower.image is not None and webp.image is not None
    assert Image.open(io.BytesIO(webp.image)).format == "WEBP"

    # A region: its pixels are read and hashed anew each time, its picture encoded once.
    part = Region(10, 10, 100, 80)
    cut = await screen.frame(region=part, encoding=JPEG)
    again = await screen.frame(region=part, encoding=JPEG)
    assert again.hash == cut.hash and again.image == cut.image
    assert encodes[3:] == [JPEG]
