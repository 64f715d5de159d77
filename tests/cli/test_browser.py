"""`holm browser …` on a real box of a real holmd: a page opened, read, searched, filled,
clicked, evaluated and captured by meaning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_kit import RunHolm
from page_kit import page

from holm.cli.remote import EXIT_CODES

pytestmark = pytest.mark.desktop

FORM = page(
    "<title>Browser CLI</title><h1>Greeting</h1><label for=n>Name</label><input id=n>"
    "<button onclick=\"document.querySelector('h1').textContent = 'Hello ' + n.value\">"
    "Greet</button>"
)


def ok(holm: RunHolm, *args: str) -> str:
    result = holm(*args)
    assert result.exit_code == 0, result.output
    return str(result.output)


def test_holm_browser_drives_a_page_by_meaning(holm: RunHolm, box: str, tmp_path: Path) -> None:
    opened = json.loads(ok(holm, "browser", "open", box, FORM, "--label", "cli", "--json"))
    assert (opened["title"], opened["label"]) == ("Browser CLI", "cli")
    assert "# Greeting" in ok(holm, "browser", "read", box, "--tab", "cli")
    assert "Greet" in ok(holm, "browser", "find", box, "button Greet")
    assert "Name" in ok(holm, "browser", "snapshot", box)
    filled = ok(holm, "browser", "fill", box, "Name", "Ada")
    assert 'changed textbox "Name" = Ada' in filled
    assert 'click button "Greet"' in ok(holm, "browser", "click", box, "Greet")
    title = ok(holm, "browser", "eval", box, "document.querySelector('h1').textContent")
    assert json.loads(title) == "Hello Ada"
    shot = tmp_path / "page.png"
    assert ok(holm, "browser", "shot", box, "-o", str(shot)).strip() == str(shot)
    assert shot.read_bytes().startswith(b"\x89PNG")
    # docs/cli.md: an operation whose query finds nothing is `not_found`, naming it; `find`
    # lists what it found, nothing included.
    missing = holm("browser", "click", box, "Nowhere")
    assert missing.exit_code == EXIT_CODES["not_found"] and "Nowhere" in missing.stderr
    found = json.loads(ok(holm, "browser", "find", box, "Nowhere", "--json"))
    assert found["elements"] == []


CONTROLS = page(
    "<title>Controls</title><label><input type=checkbox id=c> News</label>"
    "<select aria-label=Colour><option>Red</option><option>Green</option></select>"
    "<script>console.error('broken thing')</script>"
)


def test_holm_browser_controls_tabs_state_and_cookies(
    holm: RunHolm, box: str, tmp_path: Path
) -> None:
    ok(holm, "browser", "open", box, CONTROLS, "--new-tab", "--label", "controls")
    checked = json.loads(ok(holm, "browser", "check", box, "News", "--tab", "controls", "--json"))
    assert checked["element"]["checked"] is True
    chosen = json.loads(ok(holm, "browser", "choose", box, "Colour", "Green", "--json"))
    assert chosen["options"] == ["Green"]
    assert "Controls" in ok(holm, "browser", "wait", box, "Colour")
    assert "broken thing" in ok(holm, "browser", "console", box, "--errors")
    assert "controls" in ok(holm, "browser", "tabs", box)

    origin = "http://127.0.0.1:8799"
    assert "1 set" in ok(holm, "browser", "cookies", "set", box, "sid=s3cret", "--site", origin)
    listed = json.loads(ok(holm, "browser", "cookies", "ls", box, "--site", origin, "--json"))
    assert [(c["name"], c["value"]) for c in listed] == [("sid", "s3cret")]
    state_file = tmp_path / "state.json"
    ok(holm, "browser", "state", "save", box, "-o", str(state_file))
    assert "s3cret" in state_file.read_text()
    assert "kept as cli" in ok(holm, "browser", "state", "save", box, "--name", "cli")
    assert "cli" in ok(holm, "browser", "state", "ls")
    assert "1 removed" in ok(holm, "browser", "cookies", "clear", box, "--site", origin)
    assert "cookies" in ok(holm, "browser", "state", "load", box, "--name", "cli")
    again = json.loads(ok(holm, "browser", "cookies", "ls", box, "--site", origin, "--json"))
    assert [c["value"] for c in again] == ["s3cret"]
    assert "cli removed" in ok(holm, "browser", "state", "rm", "cli")
    assert ok(holm, "browser", "devtools", box).startswith("http")
    assert "closed" in ok(holm, "browser", "close", box, "controls")
