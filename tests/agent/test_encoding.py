"""The agent's own PNG writer gives back every pixel it was given, whatever the size and
mode of the picture, in a zlib stream of bands deflated apart that any reader takes whole;
JPEG and WebP give pictures of the same size; no X needed."""

from __future__ import annotations

import io
import os
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image
from png_kit import decoded

from holm.agent.frames.encoding import image_bytes
from holm.agent.frames.png_bands import BAND_ROWS, adler32_combine, png
from holm.wire.values import Encoding, ImageFormat


def noise(width: int, height: int, mode: str = "RGB") -> Image.Image:
    channels = len(mode)
    return Image.frombytes(mode, (width, height), os.urandom(width * height * channels))


@pytest.mark.parametrize(
    "size",
    [
        (1, 1),
        (33, 7),
        (7, 33),
        (5, BAND_ROWS),
        (5, BAND_ROWS + 1),
        (3, 3 * BAND_ROWS - 1),
        (1280, 800),
    ],
)
def test_png_keeps_every_pixel(size: tuple[int, int]) -> None:
    image = noise(*size)
    back = decoded(png(image))
    assert back.size == size
    assert back.tobytes() == image.tobytes()


def test_a_screen_like_picture_compresses() -> None:
    """Bands deflated apart still find a screen's runs: a flat picture with a little noise
    is a small fraction of its pixels' bytes."""
    image = Image.new("RGB", (1280, 800), (240, 240, 240))
    image.paste(noise(200, 150), (300, 200))
    data = png(image)
    assert decoded(data).tobytes() == image.tobytes()
    assert len(data) < 200 * 150 * 3 + 1280 * 800 * 3 // 50


@pytest.mark.parametrize("mode", ["RGBA", "L"])
def test_png_of_another_mode_is_its_rgb(mode: str) -> None:
    image = noise(40, 30, mode)
    assert decoded(png(image)).tobytes() == image.convert("RGB").tobytes()


@given(st.binary(max_size=2000), st.binary(max_size=2000), st.integers(0, 5))
def test_adler32_combine_is_the_adler32_of_both(first: bytes, second: bytes, times: int) -> None:
    # Repeating the second run makes lengths past 65521 (the sums' modulus) come up.
    second = second * (times * 20 + 1)
    combined = adler32_combine(zlib.adler32(first), zlib.adler32(second), len(second))
    assert combined == zlib.adler32(first + second)


@pytest.mark.parametrize(("fmt", "name"), [("png", "PNG"), ("jpeg", "JPEG"), ("webp", "WEBP")])
def test_each_format_decodes_to_the_same_size(fmt: ImageFormat, name: str) -> None:
    back = Image.open(io.BytesIO(image_bytes(noise(320, 200), Encoding(fmt, 50))))
    back.load()
    assert (back.format, back.size) == (name, (320, 200))
