"""How much a remote runtime costs: a recorded click (`POST …/actions`, one click, through
the front server's API) and box create → ready, on a box of the front holmd's own `docker`
runtime, on one of a `holm` runtime (another holmd on this machine, whose boxes are on
its `docker` runtime) and on one of a remote `docker` runtime (a second dockerd in a network
namespace of this machine, over TLS: tests/kits/remote_dockerd.py), in one run, interleaved.
The remote engine starts empty: the image is sent there first (`POST …/image`), timed.

    .venv/bin/python bench/remote_runtimes.py [--clicks 100] [--boxes 3] [--runs 3] [--against DIR]

Both servers are `holmd` in processes of their own on 127.0.0.1 (ports of 16100-16199),
each with its own state dir; the Docker Engine is scripts/dockerd-up's. The boxes are
the default spec's (Chromium on each). `--runs` measures that many rounds of clicks on the
same boxes, one after the other, each printed: how far the p50s move on this machine.
`--against DIR` (another checkout, e.g. `git -C MAIN archive HEAD | tar -x -C DIR`) adds a
third holmd run from DIR's code, with a `docker` box and a remote `docker` box of its own on
the same far engine, clicked in the same interleaving: before and after in one run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lean_http import LeanHttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from kits.remote_dockerd import RemoteEngine, remote_engine  # noqa: E402

PORTS = (16170, 16171, 16172)
CLICK = {"actions": [{"type": "click", "at": {"x": 40, "y": 40}}]}
CONFIRM = {"x-holm-confirm-delete": "true"}


@contextlib.contextmanager
def holmd(port: int, repo: Path = REPO) -> Iterator[str]:
    """A holmd of `repo`'s code whose default runtime is docker, on a fresh state dir, with
    no token (it listens on loopback); its URL."""
    state_dir = Path(tempfile.mkdtemp(prefix="hrr-", dir="/tmp"))
    env = {
        **os.environ,
        "PYTHONPATH": str(repo),
        "HOLM_SERVER_ADDR": f"127.0.0.1:{port}",
        "HOLM_SERVER_AUTH": "none",
        "HOLM_STATE_DIR": str(state_dir),
        "HOLM_STORAGE_BACKEND": "local",
        "HOLM_DEFAULT_RUNTIME": "docker",
        "HOLM_LOG_LEVEL": "WARNING",
    }
    # In `repo`: `-m` puts the working folder first on the path, before PYTHONPATH.
    server = subprocess.Popen(
        [sys.executable, "-m", "holm.server"], env=env, cwd=repo, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{url}/v1/health", timeout=2) as answer,
            ):
                if answer.status == 200:
                    break
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit(f"holmd on {port} did not start")
            time.sleep(0.2)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
        shutil.rmtree(state_dir, ignore_errors=True)


def p50(values: list[float]) -> str:
    return f"p50 {statistics.median(values) * 1000:.1f} ms, min {min(values) * 1000:.1f} ms"


@dataclass(frozen=True)
class Way:
    """A runtime of one of the front servers, whose boxes are clicked."""

    label: str
    front: LeanHttp
    url: str
    runtime: str


def add_remote_docker(front: LeanHttp, engine: RemoteEngine) -> None:
    """The far engine as the front's runtime `rdocker`, its image sent there (timed)."""
    remote = {
        "name": "rdocker",
        "provider": "docker",
        "fields": {"host": engine.host},
        "secrets": engine.client.secrets(),
    }
    front.json("POST", "/v1/runtimes", remote)
    front.json("POST", "/v1/runtimes/docker/image", {"spec": {}})
    began = time.perf_counter()
    sent = front.json("POST", "/v1/runtimes/rdocker/image", {"spec": {}})
    print(f"the image sent to the remote engine: {time.perf_counter() - began:.1f} s", sent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=100)
    parser.add_argument("--boxes", type=int, default=3)
    # Runs of clicks on the same boxes, one after the other: the spread of the p50s.
    parser.add_argument("--runs", type=int, default=3)
    # Another checkout's holmd beside this one's: before and after a change, in one run.
    parser.add_argument("--against", type=Path)
    args = parser.parse_args()
    up = subprocess.run([str(REPO / "scripts/dockerd-up")], capture_output=True, text=True)
    if up.returncode != 0:
        raise SystemExit(f"no Docker Engine: {up.stderr}")
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with contextlib.ExitStack() as stack:
        # The engine first, so that it stops last: a holmd whose engine is gone lists it
        # once more as it stops.
        engine = stack.enter_context(remote_engine())
        front_url = stack.enter_context(holmd(PORTS[0]))
        back_url = stack.enter_context(holmd(PORTS[1]))
        front = LeanHttp(front_url)
        stack.callback(front.close)
        vendor = {
            "name": "far",
            "provider": "holm",
            "fields": {"url": back_url, "runtime": "docker"},
            "secrets": {"api_key": secrets.token_urlsafe(16)},
        }
        front.json("POST", "/v1/runtimes", vendor)
        add_remote_docker(front, engine)
        ways = [
            Way("docker (the front's own)", front, front_url, "docker"),
            Way("holm (docker behind it)", front, front_url, "far"),
            Way("docker on a remote engine (TLS)", front, front_url, "rdocker"),
        ]
        if args.against is not None:
            before_url = stack.enter_context(holmd(PORTS[2], args.against.resolve()))
            before = LeanHttp(before_url)
            stack.callback(before.close)
            add_remote_docker(before, engine)
            ways += [
                Way(f"docker, {args.against}'s holmd", before, before_url, "docker"),
                Way(f"remote docker (TLS), {args.against}'s holmd", before, before_url, "rdocker"),
            ]
        boxes = stack.enter_context(made_boxes(ways, args.boxes))
        for run in range(1, args.runs + 1):
            clicks: dict[str, list[float]] = {way.label: [] for way in ways}
            for _ in range(args.clicks):
                for way in ways:
                    path = f"/v1/boxes/{boxes[way.label]}/screens/0/actions"
                    began = time.perf_counter()
                    done = way.front.json("POST", path, CLICK)
                    clicks[way.label].append(time.perf_counter() - began)
                    assert done["results"][0]["ok"], done
            load = os.getloadavg()[0]
            print(f"run {run} of {args.runs} (load average {load:.1f}):")
            for way in ways:
                print(f"  a recorded click, {way.label}: {p50(clicks[way.label])} ({args.clicks})")
            # Each runtime against its own server's local docker.
            for way in ways:
                if way.runtime == "docker":
                    continue
                local = next(w for w in ways if w.front is way.front and w.runtime == "docker")
                mine, theirs = clicks[way.label], clicks[local.label]
                over = statistics.median(mine) - statistics.median(theirs)
                least = min(mine) - min(theirs)
                print(
                    f"  {way.label}'s overhead on a click: {over * 1000:.2f} ms "
                    f"(p50 - p50), {least * 1000:.2f} ms (min - min)"
                )


@contextlib.contextmanager
def made_boxes(ways: list[Way], count: int) -> Iterator[dict[str, str]]:
    """`count` boxes made on each way, taking turns, create → ready timed; the first of
    each kept (its ID by the way's label) and removed at the end, the others at once."""
    made: dict[str, list[float]] = {way.label: [] for way in ways}
    boxes: dict[str, str] = {}
    try:
        for round_ in range(count):
            for way in ways:
                began = time.perf_counter()
                body = {"placement": {"runtime": way.runtime}}
                view = way.front.json("POST", "/v1/boxes", body)
                made[way.label].append(time.perf_counter() - began)
                assert view["state"] == "ready", view
                if round_ == 0:
                    boxes[way.label] = view["id"]
                else:
                    remove(way.url, view["id"])
        for way in ways:
            print(f"create → ready, {way.label}: {p50(made[way.label])} ({count} boxes)")
        yield boxes
    finally:
        for way in ways:
            if way.label in boxes:
                remove(way.url, boxes[way.label])


def remove(url: str, box: str) -> None:
    request = urllib.request.Request(f"{url}/v1/boxes/{box}", method="DELETE", headers=CONFIRM)
    with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=120):
        pass


if __name__ == "__main__":
    main()
