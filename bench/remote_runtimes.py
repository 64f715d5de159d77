"""How much a remote runtime costs: a recorded click (`POST …/actions`, one click, through
the front server's API) and box create → ready, on a box of the front holmd's own `docker`
runtime, on one of a `holm` runtime (another holmd on this machine, whose boxes are on
its `docker` runtime) and on one of a remote `docker` runtime (a second dockerd in a network
namespace of this machine, over TLS: tests/kits/remote_dockerd.py), in one run, interleaved.
The remote engine starts empty: the image is sent there first (`POST …/image`), timed.

    .venv/bin/python bench/remote_runtimes.py [--clicks 100] [--boxes 3] [--runs 3]

Both servers are `holmd` in processes of their own on 127.0.0.1 (ports of 16100-16199),
each with its own state dir; the Docker Engine is scripts/dockerd-up's. The boxes are
the default spec's (Chromium on each). `--runs` measures that many rounds of clicks on the
same boxes, one after the other, each printed: how far the p50s move on this machine.
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
from pathlib import Path

from lean_http import LeanHttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from kits.remote_dockerd import remote_engine  # noqa: E402

PORTS = (16170, 16171)
CLICK = {"actions": [{"type": "click", "at": {"x": 40, "y": 40}}]}
CONFIRM = {"x-holm-confirm-delete": "true"}


@contextlib.contextmanager
def holmd(port: int) -> Iterator[str]:
    """A holmd whose default runtime is docker, on a fresh state dir, with no token (it
    listens on loopback); its URL."""
    state_dir = Path(tempfile.mkdtemp(prefix="hrr-", dir="/tmp"))
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HOLM_SERVER_ADDR": f"127.0.0.1:{port}",
        "HOLM_SERVER_AUTH": "none",
        "HOLM_STATE_DIR": str(state_dir),
        "HOLM_STORAGE_BACKEND": "local",
        "HOLM_DEFAULT_RUNTIME": "docker",
        "HOLM_LOG_LEVEL": "WARNING",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "holm.server"], env=env, start_new_session=True
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=100)
    parser.add_argument("--boxes", type=int, default=3)
    # Runs of clicks on the same boxes, one after the other: the spread of the p50s.
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    up = subprocess.run([str(REPO / "scripts/dockerd-up")], capture_output=True, text=True)
    if up.returncode != 0:
        raise SystemExit(f"no Docker Engine: {up.stderr}")
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with holmd(PORTS[0]) as front_url, holmd(PORTS[1]) as back_url, remote_engine() as engine:
        front = LeanHttp(front_url)
        vendor = {
            "name": "far",
            "provider": "holm",
            "fields": {"url": back_url, "runtime": "docker"},
            "secrets": {"api_key": secrets.token_urlsafe(16)},
        }
        front.json("POST", "/v1/runtimes", vendor)
        remote = {
            "name": "rdocker",
            "provider": "docker",
            "fields": {"host": engine.host},
            "secrets": engine.client.secrets(),
        }
        front.json("POST", "/v1/runtimes", remote)
        began = time.perf_counter()
        front.json("POST", "/v1/runtimes/docker/image", {"spec": {}})
        sent = front.json("POST", "/v1/runtimes/rdocker/image", {"spec": {}})
        print(f"the image sent to the remote engine: {time.perf_counter() - began:.1f} s", sent)
        ways = ("docker", "far", "rdocker")
        labels = {
            "docker": "docker (the front's own)",
            "far": "holm (docker behind it)",
            "rdocker": "docker on a remote engine (TLS)",
        }
        made: dict[str, list[float]] = {way: [] for way in ways}
        boxes: dict[str, str] = {}
        try:
            for round_ in range(args.boxes):
                for way in ways:
                    began = time.perf_counter()
                    view = front.json("POST", "/v1/boxes", {"placement": {"runtime": way}})
                    made[way].append(time.perf_counter() - began)
                    assert view["state"] == "ready", view
                    if round_ == 0:
                        boxes[way] = view["id"]
                    else:
                        remove(front_url, view["id"])
            for way in ways:
                print(f"create → ready, {labels[way]}: {p50(made[way])} ({args.boxes} boxes)")
            for run in range(1, args.runs + 1):
                clicks: dict[str, list[float]] = {way: [] for way in ways}
                for _ in range(args.clicks):
                    for way in ways:
                        path = f"/v1/boxes/{boxes[way]}/screens/0/actions"
                        began = time.perf_counter()
                        done = front.json("POST", path, CLICK)
                        clicks[way].append(time.perf_counter() - began)
                        assert done["results"][0]["ok"], done
                load = os.getloadavg()[0]
                print(f"run {run} of {args.runs} (load average {load:.1f}):")
                for way in ways:
                    print(f"  a recorded click, {labels[way]}: {p50(clicks[way])} ({args.clicks})")
                for way in ways[1:]:
                    over = statistics.median(clicks[way]) - statistics.median(clicks["docker"])
                    least = min(clicks[way]) - min(clicks["docker"])
                    print(
                        f"  {labels[way]}'s overhead on a click: {over * 1000:.2f} ms "
                        f"(p50 - p50), {least * 1000:.2f} ms (min - min)"
                    )
        finally:
            front.close()
            for box in boxes.values():
                remove(front_url, box)


def remove(url: str, box: str) -> None:
    request = urllib.request.Request(f"{url}/v1/boxes/{box}", method="DELETE", headers=CONFIRM)
    with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=120):
        pass


if __name__ == "__main__":
    main()
