"""How fast a docker box with the network comes up and fetches, against the host fetching
the same file from the same server. Run it under the PYTHONPATH of two checkouts, in turns,
to set the engine's bridge (before) beside pasta (now).

    PYTHONPATH=. .venv/bin/python bench/docker_network.py [MIB] [ROUNDS]   (64 MiB, 3)

The server is a test host this bench makes and removes (tests/kits/net.py): a network
namespace joined to the host by a veth pair, in 10.213.0.0/16. No other address is
contacted. Boxes are made without Chromium, from the default image (built if missing).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from box_network import FETCH, rate, test_host

from holm.adapters.docker.runtime import DockerRuntime
from holm.wire.actions import Exec, ExecWhat
from holm.wire.results import ExecResult, expect
from holm.wire.spec import Placement, Policy, Spec


async def main(mib: int, rounds: int) -> None:
    state = Path(tempfile.mkdtemp(prefix="holm-bench-", dir="/tmp"))
    served = state / "served"
    served.mkdir()
    (served / "payload").write_bytes(os.urandom(mib << 20))
    runtime = DockerRuntime(state / "boxes", "bench", chromium=False)
    await runtime.build_image(Spec())
    ups, host, box = [], [], []
    try:
        with test_host(served) as url:
            for _ in range(rounds):
                box_id = f"box_{secrets.token_hex(6)}"
                start = time.perf_counter()
                await runtime.create(box_id, Spec(policy=Policy(network=True)), Placement())
                ups.append(time.perf_counter() - start)
                try:
                    done = subprocess.run(
                        [sys.executable, "-c", FETCH, url], capture_output=True, text=True
                    )
                    size, seconds = done.stdout.split()
                    host.append(rate(int(size), float(seconds)))
                    desktop = await runtime.desktop(box_id)
                    fetch = ExecWhat(argv=["python3", "-c", FETCH, url], timeout_ms=120_000)
                    result = expect(await desktop.act(0, Exec(what=fetch)), ExecResult)
                    size, seconds = result.stdout.split()
                    assert int(size) == mib << 20, result
                    box.append(rate(int(size), float(seconds)))
                finally:
                    await runtime.delete(box_id)
        print(f"medians of {rounds}: a docker box with the network ready from create")
        print(f"  {statistics.median(ups):.2f} s; fetch of {mib} MiB from a test host (veth):")
        rates = f"{statistics.median(host):.1f} MiB/s, the box {statistics.median(box):.1f}"
        print(f"  the host {rates} MiB/s")
    finally:
        await runtime.close()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(
        main(
            int(sys.argv[1]) if len(sys.argv) > 1 else 64,
            int(sys.argv[2]) if len(sys.argv) > 2 else 3,
        )
    )
