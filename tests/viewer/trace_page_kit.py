"""What the tests of the trace page share: the `holm` command as a process of its own, a
headless Chromium (Debian's, driven over DevTools), a person's click on a row, and what a
panel beside the rows shows once its picture is decoded."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from kits.chromium import CHROMIUM, Chromium
from kits.holmd import clean_env

# The `holm` command, run from the worktree's code (clean_env's PYTHONPATH).
HOLM = [sys.executable, "-c", "from holm.cli import main; main()"]

needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium")


def run_holm(*args: str, cwd: Path, exits: int = 0) -> str:
    """`holm ARGS…` in `cwd`; its stdout, once it exited with `exits`."""
    done = subprocess.run(
        [*HOLM, *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == exits, done.stderr
    return done.stdout


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def chromium(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Chromium]:
    async with Chromium(tmp_path_factory.mktemp("chromium")) as browser:
        await browser.call("Network.enable")
        yield browser


async def click(chromium: Chromium, selector: str) -> None:
    """A person's click: the row scrolled into view, the mouse pressed on its middle."""
    box = await chromium.evaluate(
        f"(() => {{ const row = document.querySelector({selector!r});"
        " row.scrollIntoView({block: 'center'}); const r = row.getBoundingClientRect();"
        " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
    )
    for kind in ("mousePressed", "mouseReleased"):
        await chromium.call(
            "Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1
        )


async def panel(chromium: Chromium, n: int = 0) -> dict[str, Any]:
    """Panel `n` beside the rows once its picture is decoded: the picture (hidden, natural
    size, where it is drawn, its data), the caption, the caption of the action, the
    command's output, and the shapes drawn on the picture with where they are drawn."""
    shown = await chromium.evaluate(
        f"(async () => {{ const panel = document.querySelectorAll('.panel')[{n}];"
        " const shot = panel.querySelector('.shot'); const img = shot.querySelector('img');"
        " if (!shot.hidden && img.src) await img.decode();"
        " const box = (e) => { const r = e.getBoundingClientRect();"
        "   return {left: r.left, top: r.top, width: r.width, height: r.height}; };"
        " const out = panel.querySelector('.output');"
        " const row = document.querySelector('.row.chosen');"
        " return {seq: row && row.dataset.seq !== undefined ? Number(row.dataset.seq) : null,"
        " hidden: shot.hidden, width: img.naturalWidth, height: img.naturalHeight,"
        " img: box(img), src: img.getAttribute('src') || '',"
        " caption: panel.querySelector('.caption').textContent,"
        " say: panel.querySelector('.say').textContent,"
        " output: out.hidden ? null : {ended: out.querySelector('.ended').textContent,"
        "   stdout: out.querySelector('.stdout').textContent,"
        "   stdout_elements: out.querySelector('.stdout').children.length,"
        "   stderr: out.querySelector('.stderr').textContent,"
        "   notes: out.querySelector('.notes').textContent},"
        " marks: [...shot.querySelectorAll('svg *')].map((e) =>"
        "   ({tag: e.tagName, cls: e.getAttribute('class'), box: box(e)}))}; })()"
    )
    assert isinstance(shown, dict)
    return shown


__all__ = [
    "CHROMIUM",
    "HOLM",
    "Chromium",
    "chromium",
    "click",
    "needs_chromium",
    "panel",
    "run_holm",
]
