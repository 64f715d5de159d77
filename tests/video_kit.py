"""What the tests of screen recording share (tests/cli on a local box, tests/docker): a page
that changes every frame, and what the host's ffprobe and ffmpeg read of an MP4 made in a
box."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

from PIL import Image

# A page whose colour and text change every frame, never coming back to an earlier one.
ANIMATED = (
    "data:text/html,<title>moving</title><body style='margin:0'><h1 id=t>0</h1><script>"
    "const t0 = performance.now();"
    "const step = () => { const s = (performance.now() - t0) / 1000;"
    "document.body.style.background = `hsl(${(s * 40) %25 360}, 80%25, 50%25)`;"
    "document.getElementById('t').textContent = s.toFixed(2);"
    "requestAnimationFrame(step); }; step();</script></body>"
)


def probe(video: Path) -> dict[str, Any]:
    """What ffprobe reads of the file's one video stream and its container."""
    entries = "format=format_name,duration:stream=codec_name,width,height"
    done = subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", entries, "-of", "json", str(video)],
        capture_output=True,
        check=True,
    )
    found: dict[str, Any] = json.loads(done.stdout)
    (stream,) = found["streams"]
    return {**stream, **found["format"], "duration": float(found["format"]["duration"])}


def frame_at(video: Path, seconds: float) -> Image.Image:
    one_png = ["-frames:v", "1", "-f", "image2pipe", "-c:v", "png", "-"]
    done = subprocess.run(
        ["ffmpeg", "-v", "error", "-ss", str(seconds), "-i", str(video), *one_png],
        capture_output=True,
        check=True,
    )
    return Image.open(io.BytesIO(done.stdout)).convert("RGB")
