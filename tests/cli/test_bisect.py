"""`holm bisect` against real holmds: on a trace whose page shows a word only after step k
of n, it finds k in at most ceil(log2 n) + 1 forks and leaves no box behind. The in-memory
runtime serves pages from their data: URLs (its page text is the URL's), which is enough
for the search itself; one run on a real box (Xvfb, Chromium) reads what Chromium shows."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
from e2e_kit import HOLM, Holmd, memory_holmd

from holm.client import SyncHolmClient
from holm.wire.actions import Move, OpenUrl
from holm.wire.values import Point

REPO = Path(__file__).resolve().parents[2]
server = memory_holmd


def holm(server: Holmd, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(HOLM), *args],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), **server.client_env},
        timeout=600,
        check=False,
    )


def word_after(client: SyncHolmClient, n: int, k: int, page: Any) -> tuple[str, list[int]]:
    """A box of n steps (one a batch) whose page shows "Shipped" from step k on; the seqs
    of its steps."""
    box_id = client.create_box().id
    for step in range(1, n + 1):
        if step == 1:
            client.act(box_id, [OpenUrl(url=page("Waiting"))])
        elif step == k:
            client.act(box_id, [OpenUrl(url=page("Shipped"))])
        else:
            client.act(box_id, [Move(to=Point(x=10 * step, y=10))])
    seqs = [e.seq for e in client.trace(box_id).entries if type(e).__name__ == "Acted"]
    assert len(seqs) == n
    return box_id, seqs


def data_page(word: str) -> str:
    return f"data:text/html,<title>Order</title><p>Order {word}</p>"


def boxes_of(client: SyncHolmClient) -> set[str]:
    return {box.id for box in client.list_boxes()}


@pytest.mark.parametrize(("n", "k"), [(13, 9), (8, 2), (5, 5)])
def test_it_finds_the_step_in_few_forks_and_leaves_no_box(server: Holmd, n: int, k: int) -> None:
    with SyncHolmClient(server.url, server.token) as client:
        source, seqs = word_after(client, n, k, data_page)
        before = boxes_of(client)
        done = holm(server, "bisect", source, "--until", "Order Shipped", "--json")
        assert done.returncode == 0, done.stderr.decode()
        report = json.loads(done.stdout)
        assert (report["step"], report["seq"], report["steps"]) == (k, seqs[k - 1], n)
        assert report["forks"] == len(report["probes"]) <= math.ceil(math.log2(n)) + 1
        # Each probe is said: how far it replayed, and whether the word was there.
        assert all(p["holds"] == (p["step"] >= k) for p in report["probes"])
        assert all(p["removed"] for p in report["probes"])
        assert boxes_of(client) == before


def test_a_predicate_that_never_holds_costs_one_fork_and_keep_keeps_them(server: Holmd) -> None:
    with SyncHolmClient(server.url, server.token) as client:
        source, _ = word_after(client, 4, 3, data_page)
        before = boxes_of(client)
        done = holm(server, "bisect", source, "--until-url", "never-there", "--wait-ms", "0")
        assert done.returncode == 1 and b"does not hold after the last of 4 steps" in done.stdout
        assert boxes_of(client) == before
        kept = holm(server, "bisect", source, "--until-url", r"Shipped", "--keep", "--json")
        assert kept.returncode == 0, kept.stderr.decode()
        report = json.loads(kept.stdout)
        assert report["step"] == 3 and report["kept"]
        assert boxes_of(client) - before == {p["box"] for p in report["probes"]}
        usage = holm(server, "bisect", source, "--until", "a", "--until-url", "b")
        assert usage.returncode == 2


def chromium_page(word: str) -> str:
    style = "caret-color:transparent"
    return f"data:text/html,<title>Order</title><body style='{style}'><h1>Order {word}</h1>"


@pytest.mark.desktop
def test_on_a_real_box_it_reads_what_chromium_shows(holmd: Holmd) -> None:
    n, k = 6, 4
    with SyncHolmClient(holmd.url, holmd.token) as client:
        source, seqs = word_after(client, n, k, chromium_page)
        before = boxes_of(client)
        try:
            done = holm(holmd, "bisect", source, "--until", "Order Shipped", "--json")
            assert done.returncode == 0, done.stderr.decode()
            report = json.loads(done.stdout)
            assert (report["step"], report["seq"]) == (k, seqs[k - 1])
            assert report["forks"] <= math.ceil(math.log2(n)) + 1
            assert boxes_of(client) == before
        finally:
            holmd.remove(source)
