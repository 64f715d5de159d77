"""The trace as one HTML page: `holm trace view FILE.jsonl` offline (golden traces, frames
from the state dir), and what a hostile box writes stays text."""

from __future__ import annotations

import base64
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from holm.cli import main
from holm.projections.trace_html import trace_html
from holm.wire.entries import Executed

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


def test_holm_trace_view_writes_one_page_with_the_frames_it_has(tmp_path: Path) -> None:
    traces = tmp_path / "state" / "traces"
    traces.mkdir(parents=True)
    trace = traces / "box_t.jsonl"
    shutil.copy(FIXTURES / "browser_takeover.jsonl", trace)
    lines = trace.read_text().splitlines()
    frames = re.findall(r'"frame":"(sha256:[0-9a-f]+)"', trace.read_text())
    kept = tmp_path / "state" / "frames" / "box_t"
    kept.mkdir(parents=True)
    (kept / f"{frames[0]}.png").write_bytes(PNG)
    out = tmp_path / "page.html"

    result = CliRunner().invoke(main, ["trace", "view", str(trace), "-o", str(out)])

    assert result.exit_code == 0, result.output
    assert result.output == f"{out}\n"
    page = out.read_text()
    assert page.count(" data-seq=") == len(lines)
    # The one frame kept is in the page once (with its size), however many steps show it.
    assert f'id="frames">[[1280,800,"{base64.b64encode(PNG).decode()}"]]<' in page
    assert page.count("(frame not kept)") == len(frames) - 1
    assert "takeover_started" in page and 'class="row single person taken"' in page
    # The page's own script, its frames and the steps' details, no more; the policy runs
    # that script only.
    assert page.count("<script") == 3 and "script-src 'sha256-" in page


def test_a_missing_file_is_not_found(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["trace", "view", str(tmp_path / "none.jsonl")])
    assert result.exit_code == 5


def test_what_a_box_wrote_stays_text() -> None:
    hostile = Executed(
        seq=0,
        at_ms=0,
        actor="agent",
        argv=["echo", "<script>alert(1)</script>"],
        code=0,
        timed_out=False,
        key="k",
        stdout="<img src=x onerror=alert(1)>",
    )
    page = trace_html("<b>title</b>", [hostile], lambda _: None)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;" in page and "&lt;b&gt;title" in page
