"""The API from outside, against a real holmd process and a real browser (docs/security.md,
"The API from outside").

- A page of another origin, in headless Chromium, sends what a page may send anywhere
  without asking (a `no-cors` fetch and a form, `text/plain`) to create a box and exec in
  one: nothing is done, with the token (the default) and with auth off.
- A page whose name is rebound to 127.0.0.1 (DNS rebinding) asks from the server's own
  origin: its Host gives it away, and nothing is done.
- With no HOLM_SERVER_TOKEN, holmd makes one in its state dir: a request without it gets
  401, and `holm` finds it there (HOLM_STATE_DIR, else ./var).
- Auth off on an address other than loopback stops holmd at start.

holmd runs here as `holm.server.main` with the in-memory runtime double in place of the
real runtimes (a box in a few milliseconds; nothing here looks inside one), everything else
as `holmd` runs it: settings from the environment, the token, the middlewares, the log.
Every process is started here and ended by its pid.
"""

from __future__ import annotations

import json
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from click.testing import CliRunner
from kits.chromium import CHROMIUM, Chromium
from kits.holmd import HOLMD, Holmd, call, clean_env, free_port

from holm.cli import main as holm_cli

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium")


def guarded(state_dir: Path, port: int | None = None, **settings: str) -> Holmd:
    """holmd as its console script runs it, with the runtime double and the memory store,
    and the token it makes itself (or none, with HOLM_SERVER_AUTH=none)."""
    defaults = {
        "HOLM_STORAGE_BACKEND": "memory",
        "HOLM_SERVER_SCHEDULE": "external",
        "HOLM_EVENTS_DELAY_MS": "0",
    }
    return Holmd(state_dir, runtime="memory", token=None, port=port, **{**defaults, **settings})


def quiet_box(holmd: Holmd) -> str:
    """A new box of the runtime double whose trace has settled."""
    box_id = holmd.create()
    # The frame watcher records the box's first frame a moment after it is ready;
    # after that, nothing is recorded but what a request does.
    for _ in range(500):
        if any(e["kind"] == "frame" for e in holmd.get(f"/v1/boxes/{box_id}/trace")["entries"]):
            return box_id
        time.sleep(0.02)
    raise AssertionError("the box's first frame was never recorded")


def everything(holmd: Holmd, box_id: str) -> dict[str, Any]:
    """What a refused request must leave as it was."""
    return {
        "boxes": holmd.get("/v1/boxes")["boxes"],
        "trace": holmd.get(f"/v1/boxes/{box_id}/trace")["entries"],
        "events": holmd.get("/v1/events")["events"],
    }


@pytest.fixture
def state_root() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="hsec-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def servers() -> Iterator[list[Holmd]]:
    """The holmd processes a test starts, stopped at its end whatever happens."""
    started: list[Holmd] = []
    yield started
    for server in started:
        server.close()


ATTACK_PAGE = """<!doctype html>
<title>a page of another origin</title>
<iframe name="out" id="out"></iframe>
<form id="form" method="POST" enctype="text/plain" target="out" action="{holmd}/v1/boxes">
  <input type="hidden" name='{{"spec": {{}}, "x": "' value='"}}'>
</form>
<script>
async function send(url, body) {{
  try {{
    const answer = await fetch(url, {{
      method: "POST", mode: "no-cors", headers: {{"content-type": "text/plain"}}, body,
    }});
    return answer.type;
  }} catch (error) {{
    return "failed: " + error;
  }}
}}
function submitForm() {{
  return new Promise(done => {{
    document.getElementById("out").onload = () => done("submitted");
    document.getElementById("form").submit();
  }});
}}
window.done = (async () => [
  await send("{holmd}/v1/boxes", JSON.stringify({{}})),
  await send("{holmd}/v1/boxes/{box}/exec", JSON.stringify({{argv: ["echo", "pwned"]}})),
  await submitForm(),
  // The control: the same kind of request to a server that takes it.
  await send("{sink}", JSON.stringify({{argv: ["echo", "pwned"]}})),
])();
</script>
"""


class PageServer:
    """The other origin: serves the pages, and keeps what its `/sink` was sent."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.pages: dict[str, str] = {}
        self.sunk: list[dict[str, str]] = []
        self.runner: web.AppRunner | None = None

    async def page(self, request: web.Request) -> web.Response:
        return web.Response(text=self.pages[request.match_info["name"]], content_type="text/html")

    async def sink(self, request: web.Request) -> web.Response:
        self.sunk.append(
            {
                "content_type": request.headers.get("Content-Type", ""),
                "site": request.headers.get("Sec-Fetch-Site", ""),
                "body": await request.text(),
            }
        )
        return web.Response(text="taken")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/pages/{name}", self.page)
        app.router.add_post("/sink", self.sink)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None


@pytest.fixture
async def page_server() -> AsyncIterator[PageServer]:
    server = PageServer(free_port())
    await server.start()
    yield server
    await server.stop()


@pytest.mark.parametrize("auth", ["token", "none"])
async def test_a_page_of_another_origin_drives_nothing(
    auth: str, state_root: Path, servers: list[Holmd], page_server: PageServer
) -> None:
    holmd = guarded(
        state_root / "state", **({"HOLM_SERVER_AUTH": "none"} if auth == "none" else {})
    )
    servers.append(holmd)
    holmd.start()
    assert (holmd.token is None) == (auth == "none")
    box = quiet_box(holmd)
    before = everything(holmd, box)
    # From localhost, 127.0.0.1 is another site; from 127.0.0.1:other-port, the same site
    # but another origin. Each page's control goes to the page server under its other name.
    origins = {
        "localhost": f"http://127.0.0.1:{page_server.port}/sink",
        "127.0.0.1": f"http://localhost:{page_server.port}/sink",
    }
    async with Chromium(state_root / "chromium") as chromium:
        for host, sink in origins.items():
            page_server.pages[host] = ATTACK_PAGE.format(holmd=holmd.url, box=box, sink=sink)
            await chromium.open(f"http://{host}:{page_server.port}/pages/{host}")
            sent = await chromium.evaluate("window.done")
            # Opaque answers: the browser sent each request and shows the page nothing.
            assert sent == ["opaque", "opaque", "submitted", "opaque"], sent
    # The browser does send these requests, with their bodies, to a server that takes them.
    assert [(s["content_type"], s["site"]) for s in page_server.sunk] == [
        ("text/plain", "cross-site"),
        ("text/plain", "cross-site"),
    ]
    assert all("pwned" in s["body"] for s in page_server.sunk)
    # holmd had them all and did nothing.
    assert everything(holmd, box) == before
    log = holmd.log()
    for site in ("cross-site", "same-site"):
        for path in ("/v1/boxes", f"/v1/boxes/{box}/exec"):
            assert f"refused POST {path} from a browser: Sec-Fetch-Site: {site}" in log, log
    assert log.count("refused POST /v1/boxes from a browser") == 4, log


REBIND_PAGE = """<!doctype html>
<title>a page whose name now means 127.0.0.1</title>
<script>
async function ask(method, path, body) {
  const answer = await fetch(path, {method, headers: {"content-type": "application/json"}, body});
  return [answer.status, await answer.json()];
}
window.attack = async () => [
  await ask("POST", "/v1/boxes", "{}"),
  await ask("GET", "/v1/boxes"),
];
</script>
"""


async def test_a_rebound_name_gets_421_and_drives_nothing(
    state_root: Path, servers: list[Holmd]
) -> None:
    """The page is served on rebind.test:PORT; then that name and port reach holmd, as
    they would once its author's DNS answers 127.0.0.1. Same origin in the browser's eyes:
    the page reads the answers, JSON bodies need no leave, and with auth off only the Host
    is left to give it away."""
    port = free_port()
    page_server = PageServer(port)
    page_server.pages["rebind"] = REBIND_PAGE
    await page_server.start()
    resolve = "--host-resolver-rules=MAP rebind.test 127.0.0.1"
    try:
        async with Chromium(state_root / "chromium", resolve) as chromium:
            await chromium.open(f"http://rebind.test:{port}/pages/rebind")
            await page_server.stop()
            holmd = guarded(state_root / "state", port=port, HOLM_SERVER_AUTH="none")
            servers.append(holmd)
            holmd.start()
            answers = await chromium.evaluate("window.attack()")
    finally:
        await page_server.stop()
    assert [status for status, _ in answers] == [421, 421], answers
    for _, body in answers:
        assert body["code"] == "denied" and "HOLM_ALLOWED_HOSTS" in body["message"]
    assert holmd.get("/v1/boxes")["boxes"] == []
    assert f"Host 'rebind.test:{port}' does not name this server" in holmd.log()


def test_without_a_token_set_holmd_makes_one_and_holm_finds_it(
    state_root: Path, servers: list[Holmd], monkeypatch: pytest.MonkeyPatch
) -> None:
    state_dir = state_root / "var"
    holmd = guarded(state_dir)
    servers.append(holmd)
    holmd.start()
    token_file = state_dir / "token"
    token = token_file.read_text().strip()
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert f"the bearer token is in {token_file}" in holmd.log()
    assert token not in holmd.log()
    status, body = call(f"{holmd.url}/v1/boxes")
    assert (status, body["code"]) == (401, "denied")
    assert call(f"{holmd.url}/v1/boxes", token="wrong")[0] == 401
    assert call(f"{holmd.url}/v1/boxes", token=token)[0] == 200

    def holm(*args: str, **env: str | None) -> Any:
        runner = CliRunner(env={"HOLM_SERVER_URL": holmd.url, "HOLM_SERVER_TOKEN": None, **env})
        return runner.invoke(holm_cli, list(args), catch_exceptions=False)

    made = holm("new", HOLM_STATE_DIR=str(state_dir))
    assert made.exit_code == 0, made.output
    box_id = made.stdout.strip()
    assert box_id.startswith("box_")
    # With no HOLM_STATE_DIR, the token file is looked for in ./var, as the README runs.
    monkeypatch.chdir(state_root)
    listed = holm("ls", HOLM_STATE_DIR=None)
    assert listed.exit_code == 0 and box_id in listed.stdout, listed.output
    # Elsewhere there is no token to find: the server refuses (denied, exit 7).
    monkeypatch.chdir(ROOT / "tests")
    assert holm("ls", HOLM_STATE_DIR=None).exit_code == 7
    # A restarted server keeps its token.
    holmd.stop()
    holmd.start()
    assert token_file.read_text().strip() == token
    assert call(f"{holmd.url}/v1/boxes", token=token)[0] == 200


def raw_request(port: int, request: bytes) -> tuple[int, str, Any]:
    """`request` sent as it is on a connection of its own: the answer's status, content
    type and JSON body (the server closes the connection after an unreadable request)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value for name, _, value in (h.partition(": ") for h in lines)}
    return int(status_line.split()[1]), headers["content-type"], json.loads(body)


def test_a_request_line_or_header_over_the_limit_answers_the_error_body(
    state_root: Path, servers: list[Holmd]
) -> None:
    holmd = guarded(state_root / "var")
    servers.append(holmd)
    holmd.start()
    box_id = holmd.create()
    host = f"Host: 127.0.0.1:{holmd.port}\r\nAuthorization: Bearer {holmd.token}\r\n"
    long = "x" * 9000
    requests = [
        f"GET /v1/boxes/{long} HTTP/1.1\r\n{host}\r\n",
        # What schemathesis sent: a long `scope` to a page route of a real box.
        f"GET /v1/boxes/{box_id}/page/snapshot?scope={long} HTTP/1.1\r\n{host}\r\n",
        f"GET /v1/boxes HTTP/1.1\r\n{host}X-Padding: {long}\r\n\r\n",
    ]
    for request in requests:
        status, content_type, body = raw_request(holmd.port, request.encode())
        assert (status, content_type) == (400, "application/json"), body
        assert body == {
            "code": "bad_request",
            "message": "the request line or a header is longer than 8190 bytes",
            "retryable": False,
        }
    # A header aiohttp cannot parse gets the same body, in its own words.
    status, _, body = raw_request(
        holmd.port, f"GET /v1/boxes HTTP/1.1\r\n{host}bad\r\n\r\n".encode()
    )
    assert status == 400 and body["code"] == "bad_request" and body["retryable"] is False, body
    assert body["message"].startswith("the request cannot be read: "), body
    # The server goes on answering, and says what it refused in a line, not a traceback.
    assert holmd.get("/v1/health")["ok"] is True
    assert "cannot be read: the request line or a header is longer" in holmd.log()
    assert "Traceback" not in holmd.log()


def test_auth_off_off_loopback_stops_holmd_at_start(state_root: Path) -> None:
    # 192.0.2.1 (TEST-NET-1) is no address of this machine: had the check let it through,
    # the bind would fail with another message and exit code, and nothing would listen.
    for addr in ("192.0.2.1", "[2001:db8::1]"):
        env = clean_env(
            HOLM_SERVER_AUTH="none",
            HOLM_SERVER_ADDR=f"{addr}:{free_port()}",
            HOLM_STATE_DIR=str(state_root / "state"),
        )
        done = subprocess.run([str(HOLMD)], env=env, capture_output=True, timeout=60)
        assert done.returncode == 2, done.stderr.decode()
        assert b"HOLM_SERVER_AUTH=none" in done.stderr and b"loopback only" in done.stderr
    # A value that is no auth mode stops it too.
    env = clean_env(HOLM_SERVER_AUTH="nope", HOLM_STATE_DIR=str(state_root / "state"))
    done = subprocess.run([str(HOLMD)], env=env, capture_output=True, timeout=60)
    assert done.returncode == 2 and b"server_auth" in done.stderr, done.stderr.decode()


# What a process in a box tries: holmd without the token, the token in its environment, the
# token file at its path on the host. Prints one JSON object.
FROM_A_BOX = """
import json, os, sys, urllib.error, urllib.request
url, token_file, token, box = sys.argv[1:5]
def reached(path):
    try:
        urllib.request.urlopen(url + path, timeout=10)
        return "200"
    except urllib.error.HTTPError as error:
        return str(error.code)
    except OSError:
        return "unreachable"
api = reached("/v1/boxes")
# Its own agent's raw stream, for a front server: never for the box.
stream = reached(f"/v1/boxes/{box}/streams/agent")
try:
    kept = open(token_file).read()
except OSError as error:
    kept = type(error).__name__
seen = token in json.dumps(dict(os.environ)) or token in kept
print(json.dumps({"api": api, "stream": stream, "token_file": kept, "token_seen": seen}))
"""

DISPLAY_BASE = 320
DISPLAY_COUNT = 4


@pytest.mark.desktop
def test_a_process_in_a_box_has_no_token_and_is_refused(
    state_root: Path, servers: list[Holmd]
) -> None:
    """A real local box (its 127.0.0.1 is its own, so holmd should not even be there): what
    runs in it has no token in its environment or its filesystem, and holmd cannot be
    reached, or refuses it (401): its API, and the stream relay of its own agent that a
    front server uses."""
    state_dir = state_root / "state"
    holmd = Holmd(
        state_dir,
        token=None,
        display_base=DISPLAY_BASE,
        display_count=DISPLAY_COUNT,
        HOLM_SERVER_SCHEDULE="external",
    )
    servers.append(holmd)
    holmd.start()
    token = holmd.token
    assert token
    box_id = holmd.create()
    try:
        argv = ["python3", "-c", FROM_A_BOX, holmd.url, str(state_dir / "token"), token, box_id]
        body = json.dumps({"argv": argv, "timeout_ms": 30_000}).encode()
        status, ran = call(f"{holmd.url}/v1/boxes/{box_id}/exec", "POST", token, body)
        assert status == 200 and ran["code"] == 0, ran
        seen = json.loads(ran["stdout"])
        assert seen["api"] in ("401", "unreachable"), seen
        assert seen["stream"] in ("401", "unreachable"), seen
        assert seen["token_file"] == "FileNotFoundError", seen
        assert seen["token_seen"] is False
    finally:
        # Its boxes removed and ended, whatever happened (boxes outlive holmd by design).
        holmd.close()
