"""A trace as a script to keep: a pytest file that strict-replays it from the `.holm` file
beside it, or its page steps as a Playwright script (`holm trace export --as`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import msgspec

from holm.events.codec import decode_line
from holm.wire import actions as act
from holm.wire.entries import Acted

if TYPE_CHECKING:
    from holm.wire.archive import Archive

PYTEST = '''"""A golden run of holm trace {trace}, exported by `holm trace export --as pytest`: it
strict-replays the trace in {holm_file} beside this file on a new box (`holm replay
--strict`, no server) and fails with the divergence report, naming the step."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from holm.wire.archive import unpack

HOLM_FILE = Path(__file__).with_name({holm_file!r})
# Seconds the replay may take, box start included.
TIMEOUT_S = 600


def test_{name}_replays_as_recorded() -> None:
    archive = unpack(HOLM_FILE.read_bytes())
    name = archive.manifest.trace
    # Short: the box's sockets live below it.
    state = Path(tempfile.mkdtemp(prefix="hx-", dir="/tmp"))
    try:
        trace = state / "traces" / f"{{name}}.jsonl"
        trace.parent.mkdir(parents=True)
        trace.write_bytes(b"".join(line + b"\\n" for line in archive.lines))
        for frame_hash, png in archive.frames.items():
            frame = state / "frames" / name / f"{{frame_hash}}.png"
            frame.parent.mkdir(parents=True, exist_ok=True)
            frame.write_bytes(png)
        for ref, data in archive.blobs.items():
            blob = state / "blobs" / ref[7:9] / ref[7:]
            blob.parent.mkdir(parents=True, exist_ok=True)
            blob.write_bytes(data)
        done = subprocess.run(
            [sys.executable, "-m", "holm.cli", "replay", str(trace), "--strict", "--json"],
            capture_output=True,
            env={{**os.environ, "HOLM_STATE_DIR": str(state / "run")}},
            timeout=TIMEOUT_S,
            check=False,
        )
    finally:
        shutil.rmtree(state, ignore_errors=True)
    if done.returncode != 0:
        pytest.fail(_why(done, archive.lines), pytrace=False)


def _why(done: subprocess.CompletedProcess[bytes], lines: list[bytes]) -> str:
    try:
        report = json.loads(done.stdout)
    except ValueError:
        return f"holm replay exited {{done.returncode}}: {{done.stderr.decode()[-2000:]}}"
    divergence = report.get("divergence")
    if divergence is None:
        return (
            f"the replay did {{report.get('ok')}} of {{report.get('steps')}} steps (stopped"
            f" at seq {{report.get('stopped_at')}}, truncated: {{report.get('truncated')}})"
        )
    seq = divergence["seq"]
    step = next((json.loads(line) for line in lines if json.loads(line)["seq"] == seq), {{}})
    what = step.get("action", {{}}).get("type") or step.get("kind") or "step"
    return (
        f"diverged at seq {{seq}} ({{what}}: {{divergence['what']}}): expected "
        f"{{json.dumps(divergence['expected'])}}, got {{json.dumps(divergence['actual'])}}"
    )
'''

PLAYWRIGHT_HEAD = '''"""The page steps of holm trace {trace} as a Playwright script, exported by
`holm trace export --as playwright`. Run it against a holm box, through the DevTools address that
`POST /v1/boxes/BOX/cdp` (`holm browser devtools BOX`) answers:

    python {script} ws://…/v1/cdp/…

or with no address, in a Chromium of its own (`launch()`). It prints the page's text at
the end. Steps with no page meaning (pointer moves, clicks at a point) are left out, said
in a comment where they were.
"""

from __future__ import annotations

import sys

from playwright.sync_api import Page, sync_playwright


def run(page: Page) -> None:
'''

PLAYWRIGHT_TAIL = """

def main() -> None:
    address = sys.argv[1] if len(sys.argv) > 1 else None
    with sync_playwright() as playwright:
        if address is None:
            browser = playwright.chromium.launch()
        else:
            browser = playwright.chromium.connect_over_cdp(address)
        context = browser.contexts[0] if browser.contexts else browser.new_context()
        page = context.pages[0] if context.pages else context.new_page()
        run(page)
        print(page.inner_text("body"))
        if address is None:
            browser.close()


if __name__ == "__main__":
    main()
"""


def pytest_file(holm_file: str, archive: Archive) -> str:
    trace = archive.manifest.trace
    name = "".join(c if c.isalnum() else "_" for c in trace)
    return PYTEST.format(trace=trace, holm_file=holm_file, name=name)


def playwright_script(archive: Archive) -> str:
    body: list[str] = []
    for line in archive.lines:
        entry = decode_line(line, archive)
        if isinstance(entry, Acted) and entry.ok and entry.actor != "person":
            body.extend(f"    {text}" for text in _page_step(entry))
    if not any(not text.lstrip().startswith("#") for text in body):
        body.append("    pass")
    head = PLAYWRIGHT_HEAD.format(trace=archive.manifest.trace, script="run.py")
    return head + "\n".join(body) + "\n" + PLAYWRIGHT_TAIL


def _page_step(entry: Acted) -> list[str]:
    """The Playwright lines of one `acted` step, or a comment for one with no page
    meaning."""
    match entry.action:
        case act.OpenUrl(url=url):
            return [f"page.goto({url!r})"]
        case act.Type(text=text):
            return [f"page.keyboard.type({text!r})"]
        case act.Press(chord=chord):
            return [f"page.keyboard.press({'+'.join(_key(k) for k in chord)!r})"]
        case act.OnPage(what=what):
            return _element(what)
        case _:
            return [f"# seq {entry.seq}: {type(entry.action).__struct_config__.tag} (no page step)"]


def _element(what: act.ElementOp) -> list[str]:
    match what:
        case act.ClickOp(query=query, double=double):
            call = "dblclick" if double else "click"
            return [f"{_find(query)}.{call}()"]
        case act.FillOp(query=query, text=text):
            return [f"{_find(query)}.fill({text!r})"]
        case act.WaitForOp(query=str() as query, gone=gone, within_ms=within):
            state = "hidden" if gone else "visible"
            return [f"{_find(query)}.wait_for(state={state!r}, timeout={within})"]
        case act.HistoryOp(go="back"):
            return ["page.go_back()"]
        case act.HistoryOp(go="forward"):
            return ["page.go_forward()"]
        case act.HistoryOp(go="reload"):
            return ["page.reload()"]
        case _:
            return [f"# on_page {act.op_of(what)}: {json.dumps(msgspec.to_builtins(what))}"]


def _find(query: str) -> str:
    """A locator by meaning, as holm's page operations find one: a label, a placeholder,
    a role's name, the text."""
    q = repr(query)
    return (
        f"page.get_by_label({q}).or_(page.get_by_placeholder({q}))"
        f".or_(page.get_by_role('button', name={q})).or_(page.get_by_role('link', name={q}))"
        f".or_(page.get_by_text({q})).first"
    )


# X key names a trace keeps, as Playwright names them.
_KEYS = {"Return": "Enter", "ctrl": "Control", "alt": "Alt", "shift": "Shift", "super": "Meta"}


def _key(name: str) -> str:
    return _KEYS.get(name, name)


__all__ = ["playwright_script", "pytest_file"]
