"""How fast a local box fetches through its user-mode network stack (pasta), against the
host fetching the same file from the same server.

    .venv/bin/python bench/box_network.py [MIB] [DISPLAY_BASE]   (default 64 MiB, :440)

The server is a test host this bench makes and removes: a network namespace joined to the
host by a veth pair with addresses in 10.213.0.0/16 that no route of the host uses, where
`python3 -m http.server` serves one file. No other address is contacted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

# The test host is the tests' own (tests/kits/net.py): one way to make one.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from kits.net import served_host

from holm.adapters.local.runtime import LocalRuntime
from holm.wire.actions import Exec, ExecWhat
from holm.wire.results import ExecResult, expect
from holm.wire.spec import Placement, Policy, Spec

REPEAT = 5
FETCH = """
import sys, time, urllib.request
start = time.perf_counter()
size = 0
with urllib.request.urlopen(sys.argv[1], timeout=60) as answer:
    while chunk := answer.read(1 << 20):
        size += len(chunk)
print(size, time.perf_counter() - start)
"""


@contextlib.contextmanager
def test_host(folder: Path) -> Iterator[str]:
    """The URL of the payload in `folder`, served by a test host of the bench's own."""
    with served_host(folder, "bench") as host:
        yield f"http://{host.address}:{host.http_port}/payload"


def rate(size: int, seconds: float) -> float:
    return size / seconds / (1 << 20)


async def main(mib: int, display_base: int) -> None:
    state = Path(tempfile.mkdtemp(prefix="holm-bench-", dir="/tmp"))
    served = state / "served"
    served.mkdir()
    (served / "payload").write_bytes(os.urandom(mib << 20))
    runtime = LocalRuntime(
        state / "boxes", "bench", display_base=display_base, display_count=20, chromium=False
    )
    box_id = f"box_{secrets.token_hex(6)}"
    try:
        with test_host(served) as url:
            await runtime.create(box_id, Spec(policy=Policy(network=True)), Placement())
            desktop = await runtime.desktop(box_id)
            host, box = [], []
            for _ in range(REPEAT):
                done = subprocess.run(
                    [sys.executable, "-c", FETCH, str(url)], capture_output=True, text=True
                )
                size, seconds = done.stdout.split()
                host.append(rate(int(size), float(seconds)))
                fetch = ExecWhat(argv=["python3", "-c", FETCH, str(url)], timeout_ms=120_000)
                result = expect(await desktop.act(0, Exec(what=fetch)), ExecResult)
                size, seconds = result.stdout.split()
                assert int(size) == mib << 20, result
                box.append(rate(int(size), float(seconds)))
            print(f"fetch of {mib} MiB over HTTP from a test host (veth), median of {REPEAT}:")
            print(f"  the host itself          {statistics.median(host):8.1f} MiB/s")
            print(f"  a box, through pasta     {statistics.median(box):8.1f} MiB/s")
    finally:
        with contextlib.suppress(Exception):
            await runtime.delete(box_id)
        await runtime.close()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    size_mib = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    base = int(sys.argv[2]) if len(sys.argv) > 2 else 440
    asyncio.run(main(size_mib, base))
