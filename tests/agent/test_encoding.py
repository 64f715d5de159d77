"""The agent's own PNG writer gives back every pixel it was given, whatever the size and
mode of the picture, and JPEG and WebP give pictures of the same size; no X needed."""

from __future__ import annotations

import io
import os

import pytest
from PIL import Image

from holm.adapters.agent.encoding import image_bytes, png
from holm.wire.values import Encoding, ImageFormat


def noise(width: int, height: int, mode: str = "RGB") -> Image.Image:
    channels = len(mode)
    return Image.frombytes(mode, (width, height), os.urandom(width * height * channels))


def decoded(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()  # checks every chunk's CRC and the deflate stream
    return image


@pytest.mark.parametrize("size", [(1, 1), (33, 7), (7, 33), (1280, 800)])
def test_png_keeps_every_pixel(size: tuple[int, int]) -> None:
    image = noise(*size)
    back = decoded(png(image))
    assert (back.format, back.mode, back.size) == ("PNG", "RGB", size)
    assert back.tobytes() == image.tobytes()


@pytest.mark.parametrize("mode", ["RGBA", "L"])
def test_png_of_another_mode_is_its_rgb(mode: str) -> None:
    image = noise(40, 30, mode)
    assert decoded(png(image)).tobytes() == image.convert("RGB").tobytes()


@pytest.mark.parametrize(("fmt", "name"), [("png", "PNG"), ("jpeg", "JPEG"), ("webp", "WEBP")])
def test_each_format_decodes_to_the_same_size(fmt: ImageFormat, name: str) -> None:
    back = decoded(image_bytes(noise(320, 200), Encoding(fmt, 50)))
    assert (back.format, back.size) == (name, (320, 200))
