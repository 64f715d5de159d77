"""The examples of other people's clients on a real box: Playwright over the DevTools relay
(what browser-use connects to), Playwright MCP started over stdio with the `mcp` SDK's
client replaying a model's tool calls, and the MCP configs of Claude Code and Cursor,
which must name a URL holmd serves."""

from __future__ import annotations

import json
import os
import re
import subprocess
from urllib.parse import quote, urlsplit

import httpx2
import pytest
from e2e_kit import Holmd
from kits.examples import EXAMPLES, example
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from holm import Box

pytestmark = pytest.mark.desktop

BROWSER_USE = EXAMPLES / "browser_use"
FORM = "data:text/html," + quote((EXAMPLES / "fixtures" / "form.html").read_text())
DOWNLOAD = "data:text/html," + quote(
    "<title>Files</title><h1>Reports</h1>"
    "<a id=get download='report.txt' href='data:text/plain,made in the box'>report</a>"
)


def test_playwright_over_the_relay_and_a_download_lands_in_the_box(shared_box: Box) -> None:
    seen = example("playwright_cdp.py").drive(shared_box, DOWNLOAD, download="#get")
    assert seen == {
        "title": "Files",
        "heading": "Reports",
        "file": "report.txt",
        "contents": b"made in the box",
    }


async def test_playwright_mcp_replays_its_tool_calls(shared_box: Box) -> None:
    playwright_mcp = example("playwright_mcp/run.py", "playwright_mcp_run")

    assert playwright_mcp.SERVER.exists(), "scripts/setup installs Playwright MCP (npm ci)"
    box = shared_box
    box.open(FORM)
    calls = json.loads((EXAMPLES / "fixtures" / "playwright_mcp_calls.json").read_text())["calls"]
    address = box.client.devtools(box.id, ttl_secs=600)
    answers = await playwright_mcp.run(address.url, calls)
    errors = [answer["text"][:600] for answer in answers if answer["is_error"]]
    assert len(answers) == 4 and not errors, errors
    assert '- textbox "Name" [ref=e2]' in answers[0]["text"]
    assert "Page Title: sent: Linus" in answers[-1]["text"]
    # The box's page is the one Playwright MCP changed: holm reads the same title.
    assert box.page.evaluate("document.title") == "sent: Linus"


# A server started in the background answers a moment later.
WAIT_UP = """import time, urllib.request
for _ in range(100):
    try:
        urllib.request.urlopen(%r).close()
        break
    except OSError:
        time.sleep(0.05)
"""


def test_browser_use_replays_its_run(shared_box: Box) -> None:
    """browser-use's own agent, in its own virtualenv (its pins are not holm's), on the
    box's Chromium through the DevTools relay, with a recorded run's model answers."""
    python = BROWSER_USE / ".venv" / "bin" / "python"
    assert python.exists(), "scripts/setup installs browser-use (examples/browser_use/.venv)"
    box = shared_box
    # browser-use reads only http(s) pages: the form, served in the box on its loopback.
    box.files.write("/tmp/site/form.html", (EXAMPLES / "fixtures" / "form.html").read_bytes())
    serve = "python3 -m http.server 8000 --bind 127.0.0.1 -d /tmp/site"
    started = box.exec(["sh", "-c", f"setsid {serve} >/dev/null 2>&1 </dev/null & echo $!"])
    try:
        page = "http://127.0.0.1:8000/form.html"
        box.exec(["python3", "-c", WAIT_UP % page])
        box.open(page)
        address = box.client.devtools(box.id, ttl_secs=600)
        fixture = EXAMPLES / "fixtures" / "browser_use_conversation.json"
        done = subprocess.run(
            [str(python), str(BROWSER_USE / "run.py"), address.url, "--replay", str(fixture)],
            capture_output=True,
            text=True,
            timeout=240,
            env={**os.environ, "BROWSER_USE_LOGGING_LEVEL": "warning"},
        )
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout.splitlines()[-1])
        assert report == {
            "done": True,
            "success": True,
            "result": "The form is filled with the name Ada Lovelace and sent.",
            "actions": ["input", "click", "done"],
            "errors": [],
        }
        # The box's page is the one browser-use filled and sent.
        assert box.page.evaluate("document.title") == "sent: Ada Lovelace"
        assert box.page.evaluate("document.getElementById('name').value") == "Ada Lovelace"
    finally:
        box.exec(["kill", started.stdout.strip()])


def expanded(text: str, env: dict[str, str]) -> str:
    """A config's variables as Claude Code (`${VAR}`, `${VAR:-default}`) and Cursor
    (`${env:VAR}`) expand them."""

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1).removeprefix("env:"), match.group(3)
        return env.get(name, default or "")

    return re.sub(r"\$\{([A-Za-z_:]+)(:-([^}]*))?\}", value, text)


@pytest.mark.parametrize("name", ["claude_code.mcp.json", "cursor.mcp.json"])
async def test_an_mcp_config_names_holmds_mcp(holmd: Holmd, name: str) -> None:
    env = {**os.environ, **holmd.client_env}
    config = json.loads(expanded((EXAMPLES / "mcp" / name).read_text(), env))
    server = config["mcpServers"]["holm"]
    url = urlsplit(server["url"])
    assert url.path == "/mcp" and url.hostname == "127.0.0.1"
    if name == "claude_code.mcp.json":
        # HOLM_SERVER_URL fills it in: the very server.
        assert server["url"] == f"{holmd.url}/mcp"
    # The same path and headers on this test's holmd (Cursor's names port 8080).
    headers = server["headers"]
    assert headers == {"Authorization": f"Bearer {holmd.token}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(f"{holmd.url}{url.path}", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        hello = await session.initialize()
        assert hello.server_info.name == "holm"
        assert "launch_box" in [tool.name for tool in (await session.list_tools()).tools]
