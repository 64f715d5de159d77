"""`holm browser …` on a real box of a real holmd: a page opened, read, searched, filled,
clicked, evaluated and captured by meaning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_kit import RunHolm
from page_kit import page

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
    missing = holm("browser", "click", box, "Nowhere")
    assert missing.exit_code != 0 and "Nowhere" in missing.output
