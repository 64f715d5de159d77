"""A frame's picture in the format its reader asked for: PNG (what a trace keeps, lossless)
or JPEG or WebP at a quality, which a model reads as well in fewer bytes.

Every encoder here is set for speed, since a frame is on an agent's path. The PNG is the
agent's own (png_bands.py) rather than pillow's, whose encoder tries four filters on every
row: a screen (flat areas, text, few gradients) compresses as well unfiltered, in about two
thirds of the time (bench/frames.py).
"""

from __future__ import annotations

import io

from PIL import Image

from holm.agent.frames.png_bands import png
from holm.wire.values import Encoding

# libwebp's fastest method (0 to 6): the others cost three to seven times the time for a
# fifth fewer bytes.
WEBP_METHOD = 0


def image_bytes(image: Image.Image, encoding: Encoding) -> bytes:
    """`image` encoded as `encoding` says (blocking; run it in a thread)."""
    match encoding.format:
        case "png":
            return png(image)
        case "jpeg":
            return _saved(image, "JPEG", quality=encoding.quality)
        case "webp":
            return _saved(image, "WEBP", quality=encoding.quality, method=WEBP_METHOD)


def _saved(image: Image.Image, format: str, **options: int) -> bytes:
    out = io.BytesIO()
    image.save(out, format, **options)
    return out.getvalue()


__all__ = ["image_bytes"]
