"""`holm diff` and `GET /v1/boxes/{a}/diff/{b}` against a real holmd (the in-memory runtime):
two runs that part at one step report that step first, with its kind; two runs that went the
same way report none. (A command that fails in one run only, and a screen that differs, need
a real box: tests/replay/test_divergence_local.py.)"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from e2e_kit import HOLM, Holmd, memory_holmd

from holm.client import SyncHolmClient
from holm.wire.actions import Click, OpenUrl
from holm.wire.values import Point

REPO = Path(__file__).resolve().parents[2]
server = memory_holmd


def page(title: str) -> str:
    return f"data:text/html,<title>{title}</title><p>hello</p>"


def session(
    client: SyncHolmClient, *, second: list[str], click_x: int = 10, title: str = "Form"
) -> str:
    """A box that opens a page, clicks, and runs two commands."""
    box_id = client.create_box().id
    steps: list[Callable[[], Any]] = [
        lambda: client.act(box_id, [OpenUrl(url=page(title))]),
        lambda: client.act(box_id, [Click(at=Point(x=click_x, y=20))]),
        lambda: client.exec(box_id, ["echo", "one"]),
        lambda: client.exec(box_id, second),
    ]
    for step in steps:
        step()
    return box_id


def holm_diff(server: Holmd, a: str, b: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [str(HOLM), "diff", a, b, "--json"],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), **server.client_env},
        timeout=60,
        check=False,
    )
    return done.returncode, json.loads(done.stdout)


def seq_of(client: SyncHolmClient, box_id: str, kind: str, n: int = 0) -> int:
    return [e.seq for e in client.trace(box_id).entries if type(e).__name__ == kind][n]


def test_runs_that_part_at_one_step_report_it_first(server: Holmd) -> None:
    with SyncHolmClient(server.url, server.token) as client:
        a = session(client, second=["true"])
        same = session(client, second=["true"])
        other = session(client, second=["false"])
        elsewhere = session(client, second=["true"], click_x=300)
        seqs = {box: seq_of(client, box, "Executed", 1) for box in (a, other)}
        clicks = {box: seq_of(client, box, "Acted", 1) for box in (a, elsewhere)}
        opened = client.trace(a).entries[seq_of(client, a, "Acted", 0)]
        # The route answers what `holm diff` prints, its old fields kept.
        over_rest = json.loads(client.request("GET", f"/v1/boxes/{a}/diff/{other}")[1])

    code, same_diff = holm_diff(server, a, same)
    assert code == 0 and same_diff["divergence"] is None and same_diff["matched"] == 4

    # Another command in B's last step: A's is missing there, B's said instead.
    code, replaced = holm_diff(server, a, other)
    assert code == 1
    parted = replaced["divergence"]
    assert (parted["kind"], parted["a"], parted["b"]) == ("missing", seqs[a], seqs[other])
    assert parted["step"] == "exec true" and "B did exec false" in parted["message"]
    assert over_rest["divergence"] == parted
    assert {"matched", "missing", "extra", "pairs", "frames"} <= set(over_rest)

    code, moved = holm_diff(server, a, elsewhere)
    parted = moved["divergence"]
    assert code == 1 and parted["kind"] == "missing"
    assert (parted["a"], parted["b"]) == (clicks[a], clicks[elsewhere])
    assert parted["step"] == "click 10,20"

    # What a `page` parting compares (tests/replay/test_divergence.py): the page a page
    # step left, kept in its entry.
    assert opened.result == {"page": {"url": page("Form"), "title": "Form"}}


def test_the_text_report_names_the_first_divergence(server: Holmd) -> None:
    with SyncHolmClient(server.url, server.token) as client:
        a = session(client, second=["true"])
        b = session(client, second=["true"], click_x=300)
    done = subprocess.run(
        [str(HOLM), "diff", a, b],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), **server.client_env},
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr.decode()
    assert "first divergence (missing): A's step seq" in done.stdout.decode()
