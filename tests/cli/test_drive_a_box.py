"""`holm` driving a real box of a real holmd (local runtime: Xvfb, openbox, Chromium under
bubblewrap): what each command changes is checked where a user would see it, on the
screen's pixels, in the box's files, in the trace."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from e2e_kit import Holmd, RunHolm, RunHolmProcess
from PIL import Image

from holm.cli.inside import EXIT_EXEC_NO_CODE, EXIT_EXEC_TIMED_OUT
from holm.cli.remote import EXIT_CODES
from holm.client import SyncHolmClient
from holm.wire.entries import AppsInstalled
from holm.wire.values import Point

pytestmark = pytest.mark.desktop

PAGE = """<html><head><title>holm test</title>
<style>html, body { margin: 0; height: 100%; background: rgb(200, 0, 0); }</style></head>
<body><script>
const paint = (colour) => { document.body.style.background = colour; };
let typed = "";
let down = null;
let dragged = false;
// A press and release on the page clicks it even when the pointer moved in between.
document.addEventListener("click", () => {
  if (!dragged) paint("rgb(0, 200, 0)");
  dragged = false;
});
document.addEventListener("keydown", (e) => {
  if (e.key.length === 1) typed += e.key;
  if (typed.endsWith("holm")) paint("rgb(0, 0, 200)");
});
document.addEventListener("dblclick", () => paint("rgb(200, 200, 0)"));
document.addEventListener("wheel", () => paint("rgb(200, 0, 200)"));
document.addEventListener("mousedown", (e) => { down = e.clientX; });
document.addEventListener("mouseup", (e) => {
  dragged = down !== null && Math.abs(e.clientX - down) > 100;
  if (dragged) paint("rgb(0, 200, 200)");
});
</script></body></html>
"""
# Not about:blank: opening it waits out the agent's 30 s load timeout (no load event comes).
BLANK = "data:text/html,blank"
PAGE_PATH = "/tmp/holm-page.html"
RED, GREEN, BLUE = (200, 0, 0), (0, 200, 0), (0, 0, 200)
YELLOW, MAGENTA, CYAN = (200, 200, 0), (200, 0, 200), (0, 200, 200)
# Inside the page, below Chromium's tab strip and address bar.
SPOT = (640, 600)


def colour_at(png: bytes, spot: tuple[int, int] = SPOT) -> tuple[int, ...]:
    with Image.open(io.BytesIO(png)) as image:
        assert image.format == "PNG"
        return tuple(image.convert("RGB").getpixel(spot))  # type: ignore[arg-type]


def shot(holm_process: RunHolmProcess, box: str, out: Path) -> bytes:
    """The screen as `holm shot` writes it, from a real `holm` process."""
    done = holm_process("shot", box, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == f"{out}\n"
    return out.read_bytes()


def settle(holm: RunHolm, box: str) -> None:
    result = holm("wait", box, "--still")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["still"] is True


def last_seq(holm: RunHolm, box: str) -> int:
    result = holm("trace", box, "--json")
    assert result.exit_code == 0, result.output
    return int(json.loads(result.stdout.splitlines()[-1])["seq"])


def open_page(holm: RunHolm, box: str, tmp_path: Path) -> None:
    """Copy PAGE into the box with `file put` and open it with `open`."""
    page = tmp_path / "page.html"
    page.write_text(PAGE)
    put = holm("file", "put", box, str(page), PAGE_PATH)
    assert put.exit_code == 0, put.output
    assert put.stdout == f"{PAGE_PATH}\n"
    opened = holm("open", box, f"file://{PAGE_PATH}")
    assert opened.exit_code == 0, opened.output
    assert json.loads(opened.stdout)["title"] == "holm test"
    settle(holm, box)


def test_open_click_type_and_press_change_what_the_screen_shows(
    holm: RunHolm, holm_process: RunHolmProcess, box: str, tmp_path: Path
) -> None:
    open_page(holm, box, tmp_path)
    assert colour_at(shot(holm_process, box, tmp_path / "opened.png")) == RED

    # Each step prints its value, a JSON line (docs/cli.md, "Driving a screen").
    clicked = holm("mouse", box, "click", "640", "500")
    assert clicked.exit_code == 0, clicked.output
    assert json.loads(clicked.stdout) == {"at": {"x": 640, "y": 500}}
    settle(holm, box)
    assert colour_at(shot(holm_process, box, tmp_path / "clicked.png")) == GREEN

    typed = holm("keyboard", box, "type", "holm")
    assert typed.exit_code == 0, typed.output
    assert json.loads(typed.stdout) == {"typed": 4}
    settle(holm, box)
    assert colour_at(shot(holm_process, box, tmp_path / "typed.png")) == BLUE

    # A reload brings the page back as it was loaded.
    pressed = holm("keyboard", box, "press", "ctrl+r")
    assert pressed.exit_code == 0, pressed.output
    assert json.loads(pressed.stdout) == {"pressed": ["ctrl", "r"]}
    settle(holm, box)
    assert colour_at(shot(holm_process, box, tmp_path / "reloaded.png")) == RED


def test_every_pointer_action_reaches_the_page(
    holm: RunHolm, holm_process: RunHolmProcess, holmd: Holmd, box: str, tmp_path: Path
) -> None:
    open_page(holm, box, tmp_path)
    steps = [
        (("double-click", "640", "500"), YELLOW),
        (("scroll", "640", "500", "--dy", "2"), MAGENTA),
        (("drag", "300", "500", "700", "500"), CYAN),
        (("click", "640", "500"), GREEN),
        (("down", "300", "400"), GREEN),
        (("move", "700", "400", "--motion", "smooth"), GREEN),
        (("up",), CYAN),
    ]
    for n, (args, colour) in enumerate(steps):
        done = holm("mouse", box, *args)
        assert done.exit_code == 0, done.output
        settle(holm, box)
        assert colour_at(shot(holm_process, box, tmp_path / f"{n}.png")) == colour, args
    with SyncHolmClient(holmd.url, holmd.token) as client:
        assert client.cursor(box) == Point(x=700, y=400)


def test_shot_writes_a_png_of_the_screen_size(
    holm: RunHolm, holm_process: RunHolmProcess, box: str, tmp_path: Path
) -> None:
    png = shot(holm_process, box, tmp_path / "screen.png")
    with Image.open(io.BytesIO(png)) as image:
        assert image.size == (1280, 800)
    to_stdout = holm_process("shot", box, "-o", "-")
    assert to_stdout.returncode == 0
    assert to_stdout.stdout.startswith(b"\x89PNG\r\n\x1a\n")
    half = holm("shot", box, "--scale", "50", "-o", str(tmp_path / "half.png"), "--json")
    assert half.exit_code == 0, half.output
    assert json.loads(half.stdout)["width"] == 640
    with Image.open(tmp_path / "half.png") as image:
        assert image.size == (640, 400)


def test_exec_prints_the_output_and_exits_with_the_commands_code(
    holm: RunHolm, holm_process: RunHolmProcess, box: str
) -> None:
    done = holm_process("exec", box, "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert done.returncode == 3
    assert done.stdout == b"out\n"
    assert done.stderr == b"err\n"

    assert holm("exec", box, "--", "true").exit_code == 0
    as_json = holm("exec", box, "--json", "--", "sh", "-c", "printf '%s' \"$HOME\"; exit 7")
    assert as_json.exit_code == 7
    assert json.loads(as_json.stdout)["code"] == 7

    slow = holm_process("exec", box, "--timeout-ms", "300", "--", "sleep", "5")
    assert slow.returncode == EXIT_EXEC_TIMED_OUT == 124

    # Killed by a signal, the command ended without an exit code of its own.
    killed = holm_process("exec", box, "--", "sh", "-c", "kill -9 $$")
    assert killed.returncode == EXIT_EXEC_NO_CODE == 125


def test_file_put_and_get_round_trip_every_byte(
    holm: RunHolm, holm_process: RunHolmProcess, box: str, tmp_path: Path
) -> None:
    contents = bytes(range(256)) * 64
    local = tmp_path / "bytes.bin"
    local.write_bytes(contents)
    assert holm("file", "put", box, str(local), "/tmp/bytes.bin").exit_code == 0

    copy = tmp_path / "copy.bin"
    assert holm("file", "get", box, "/tmp/bytes.bin", str(copy)).exit_code == 0
    assert copy.read_bytes() == contents
    piped = holm_process("file", "get", box, "/tmp/bytes.bin")
    assert piped.returncode == 0
    assert piped.stdout == contents

    from_stdin = holm_process("file", "put", box, "-", "/tmp/stdin.txt", stdin=b"from a pipe\n")
    assert from_stdin.returncode == 0
    assert holm_process("exec", box, "--", "cat", "/tmp/stdin.txt").stdout == b"from a pipe\n"

    listing = holm("file", "ls", box, "/tmp")
    assert listing.exit_code == 0
    rows = [line.split() for line in listing.stdout.splitlines()]
    assert rows[0] == ["TYPE", "SIZE", "MODIFIED", "NAME"]
    sizes = {row[-1]: (row[0], row[1]) for row in rows[1:]}
    assert sizes["bytes.bin"] == ("file", str(len(contents)))

    missing = holm("file", "get", box, "/tmp/no-such-file")
    assert missing.exit_code == EXIT_CODES["not_found"]
    assert missing.stderr.startswith("holm: not_found: ")


def test_clip_sets_and_reads_the_clipboard(holm: RunHolm, box: str) -> None:
    assert holm("clip", box, "hello from holm").exit_code == 0
    read = holm("clip", box)
    assert read.exit_code == 0
    assert read.stdout == "hello from holm"

    assert holm("clip", box, "-", stdin="two\nlines\n").exit_code == 0
    assert holm("clip", box).stdout == "two\nlines\n"

    assert holm("clip", box, "--selection", "primary", "mine").exit_code == 0
    assert json.loads(holm("clip", box, "--selection", "primary", "--json").stdout) == {
        "selection": "primary",
        "text": "mine",
    }
    assert holm("clip", box).stdout == "two\nlines\n"


def test_trace_shows_the_steps_in_the_text_form(
    holm: RunHolm, holm_process: RunHolmProcess, box: str
) -> None:
    before = last_seq(holm, box)
    assert holm("open", box, BLANK).exit_code == 0
    assert holm("mouse", box, "click", "10", "20", "--button", "right").exit_code == 0
    assert holm("wait", box, "150").exit_code == 0
    assert holm("exec", box, "--", "false").exit_code == 1

    done = holm_process("trace", box, "--after", str(before))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    steps = [line for line in lines if "the screen changed" not in line]
    expected = [
        f"screen 0  open_url {BLANK}",
        "screen 0  click 10,20 right",
        "screen 0  wait 150 ms",
        "ran false → 1",
    ]
    assert len(steps) == len(expected), lines
    for line, text in zip(steps, expected, strict=True):
        assert re.fullmatch(rf" *\d+  agent    {re.escape(text)}", line), line
    seqs = [int(line.split()[0]) for line in lines]
    assert seqs == list(range(before + 1, before + 1 + len(lines)))

    two = holm("trace", box, "--after", str(before), "--limit", "2")
    assert two.stdout.splitlines() == lines[:2]
    as_json = [json.loads(line) for line in holm("trace", box, "--json").stdout.splitlines()]
    assert as_json[0]["kind"] == "box_created"
    assert [entry["seq"] for entry in as_json] == list(range(len(as_json)))
    followed = holm("trace", box, "--after", str(before), "--follow", "--follow-timeout", "1")
    assert followed.exit_code == 0
    assert followed.stdout.splitlines()[: len(lines)] == lines


def test_events_list_the_box_s_creation(holm: RunHolm, box: str) -> None:
    # The feed holds an event back for HOLM_EVENTS_DELAY_MS; following reads it as it shows.
    result = holm("events", "--json", "--follow", "--follow-timeout", "3")
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    mine = [event["kind"] for event in events if event.get("box_id") == box]
    assert mine[:2] == ["box.created", "box.ready"]
    seqs = [event["seq"] for event in events]
    assert seqs == sorted(seqs)

    text = holm("events", "--limit", "1", "--after", str(seqs[0] - 1))
    assert text.exit_code == 0
    assert len(text.stdout.splitlines()) == 1
    assert text.stdout.startswith(f"{seqs[0]}  ")
    assert events[0]["kind"] in text.stdout


def test_fork_prints_the_new_box_and_says_what_it_skipped(
    holm: RunHolm, holm_process: RunHolmProcess, holmd: Holmd, box: str
) -> None:
    done = holm_process("fork", box)
    new_box = done.stdout.decode().strip()
    try:
        assert done.returncode == 0, done.stderr
        assert re.fullmatch(r"box_\w+", new_box)
        # The file written in the source is skipped (its bytes are not in the trace).
        assert "skipped seq" in done.stderr.decode()
        assert "file_written" in done.stderr.decode()
        shown = json.loads(holm("box", new_box, "--json").stdout)
        assert shown["forked_from"]["source"] == box
        assert shown["state"] == "ready"
        first = holm("trace", new_box, "--limit", "2").stdout.splitlines()
        assert first[0].endswith("created 1280x800")
        assert first[1].endswith(f"forked from {box}")
    finally:
        holmd.remove(new_box)


def test_batch_prints_a_line_a_step_and_exits_with_a_refused_step_s_code(
    holm: RunHolm, box: str, tmp_path: Path
) -> None:
    steps = tmp_path / "steps.json"
    steps.write_text(
        json.dumps(
            [
                {"type": "open_url", "url": BLANK},
                {"type": "wait", "ms": 10},
                {"type": "launch", "app": "no-such-app"},
                {"type": "wait", "ms": 10},
            ]
        )
    )
    as_json = holm("batch", box, str(steps), "--json")
    result = json.loads(as_json.stdout)
    assert result["stopped_at"] == 2
    error = result["results"][2]["error"]
    assert as_json.exit_code == EXIT_CODES[error["code"]] != 0

    stopped = holm("batch", box, str(steps))
    assert stopped.exit_code == as_json.exit_code
    lines = stopped.stdout.splitlines()
    assert [line.split("  ")[:2] for line in lines] == [
        ["0", "open_url"],
        ["1", "wait"],
        ["2", "launch"],
    ]
    assert lines[1] == '1  wait  ok {"waited_ms":10}'
    assert lines[2] == f"2  launch  {error['code']}: {error['message']}"
    assert stopped.stderr == f"holm: {error['code']}: step 2 (launch): {error['message']}\n"

    went_on = holm("batch", box, str(steps), "--keep-going")
    assert went_on.exit_code == as_json.exit_code
    assert went_on.stdout.splitlines()[3] == '3  wait  ok {"waited_ms":10}'

    body = {"actions": [{"type": "move", "to": {"x": 50, "y": 60}}], "want": ["cursor"]}
    piped = holm("batch", box, "-", "--json", stdin=json.dumps(body))
    assert piped.exit_code == 0, piped.output
    assert json.loads(piped.stdout)["cursor"] == {"x": 50, "y": 60}


def test_app_opens_an_application_window(holm: RunHolm, holmd: Holmd, box: str) -> None:
    opened = holm("app", box, "xterm", "--", "-title", "opened by holm")
    assert opened.exit_code == 0, opened.output
    with SyncHolmClient(holmd.url, holmd.token) as client:
        titles = {window.title for window in client.windows(box)}
    assert "opened by holm" in titles
    unknown = holm("app", box, "no-such-app")
    assert unknown.exit_code != 0
    assert "step 0 (launch)" in unknown.stderr


def test_app_ls_lists_the_catalog_and_app_install_puts_apps_in_the_box(
    holm: RunHolm, holmd: Holmd, box: str
) -> None:
    listed = holm("app", "ls")
    assert listed.exit_code == 0, listed.output
    rows = {line.split()[0]: line.split()[1] for line in listed.stdout.splitlines()[1:]}
    assert rows["mousepad"] == "mousepad" and rows["xterm"] == "-"
    assert "libreoffice-writer" in rows["libreoffice"]

    # A local box has what the host has: mousepad, and no GIMP.
    installed = holm("app", "install", box, "editor")
    assert installed.exit_code == 0, installed.output
    refused = holm("app", "install", box, "gimp")
    assert refused.exit_code == EXIT_CODES["unsupported"]
    assert "apt-get install gimp" in refused.stderr
    with SyncHolmClient(holmd.url, holmd.token) as client:
        entries = client.trace(box).entries
    assert [e.apps for e in entries if isinstance(e, AppsInstalled)] == [["mousepad"]]


def test_view_prints_the_viewer_page_with_a_ticket(holm: RunHolm, box: str) -> None:
    import urllib.error
    import urllib.request
    from urllib.parse import parse_qs, urlsplit

    result = holm("view", box, "--control")
    assert result.exit_code == 0, result.output
    url = result.stdout.strip()
    parts = urlsplit(url)
    assert parts.path == f"/v1/boxes/{box}/screens/0/view"
    assert parse_qs(parts.query)["ticket"][0].startswith("vt_")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as answer:
        opener.open(url, timeout=30)
    assert answer.value.code == 302
    assert answer.value.headers["Location"].startswith("/v1/viewer/novnc/vnc.html?")
    assert "view_only=0" in answer.value.headers["Location"]
