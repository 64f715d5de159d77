"""How fast the docker runtime is, beside the local runtime: the base bootstrap (when it had
to, or forced), an image build from the bootstrapped base with no cache, a second build of
one spec (a cache hit), a box ready from `create`, and click and frame through the agent.

    .venv/bin/python bench/docker_runtime.py [--boxes N] [--bootstrap] [--no-build]
        [--display-base B]

`--bootstrap` makes a base with debootstrap again (into its own tag, removed after);
without it the bootstrap is timed only when the runtime had to make its base. The build is
of the default spec's Dockerfile under a throwaway source (so a new tag), with no cache,
then removed. The local runtime's figures come from one local box on displays from B.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from types import ModuleType

import msgspec

from holm.adapters.docker.bootstrap import (
    bootstrap_base_image,
    debian_suite,
    host_mirror,
    stand_in_ref,
)
from holm.adapters.docker.images import DEFAULT_BASE_IMAGE, Images
from holm.adapters.docker.runtime import DockerRuntime
from holm.adapters.local.runtime import LocalRuntime
from holm.wire.actions import Click
from holm.wire.spec import Spec
from holm.wire.values import Point

_HERE = Path(__file__).resolve().parent


def _bench_local() -> ModuleType:
    """bench/local.py, for its timing helpers (the same measure for both runtimes)."""
    spec = importlib.util.spec_from_file_location("bench_local", _HERE / "local.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


local = _bench_local()
ms, p50, boxes = local.ms, local.p50, local.boxes


def secs(seconds: float) -> str:
    return f"{seconds:8.1f} s "


def bootstrap(runtime: DockerRuntime, forced: bool) -> None:
    suite = debian_suite(DEFAULT_BASE_IMAGE) or "bookworm"
    client = runtime.client
    has_base = any(
        client.images.list(name=ref) for ref in (DEFAULT_BASE_IMAGE, stand_in_ref(suite))
    )
    if has_base and not forced:
        print("base image                 cached (no bootstrap needed; --bootstrap to time one)")
        return
    repository = "holm-base-bench" if forced else "holm-base"
    start = time.perf_counter()
    ref = bootstrap_base_image(client, suite, host_mirror(), lambda line: None, repository)
    took = time.perf_counter() - start
    print(f"base bootstrap (debootstrap --variant=minbase + import)  {secs(took)}")
    if forced:
        client.images.remove(ref, force=True)


async def build_times(runtime: DockerRuntime, fresh_build: bool) -> None:
    if fresh_build:
        # A throwaway source: a new tag, built from the base with no cache, then removed.
        source = msgspec.structs.replace(
            runtime.images.source,
            template=runtime.images.source.template + f"# bench {uuid.uuid4().hex}\n",
        )
        images = Images(
            runtime.client,
            runtime="bench",
            arch=runtime.arch,
            source=source,
            base_image=DEFAULT_BASE_IMAGE,
        )
        start = time.perf_counter()
        info = await images.build_image(Spec(), rebuild=True)
        took = time.perf_counter() - start
        size = (info.size_bytes or 0) / 1e9
        print(f"image build, default spec, no cache  {secs(took)}   ({size:.2f} GB)")
        await images.remove_image(info.digest)
    await runtime.build_image(Spec())
    hit = await p50(5, lambda: runtime.build_image(Spec()))
    print(f"second build of one spec (cache hit) p50  {ms(hit)}")


async def desktop_times(runtime: DockerRuntime | LocalRuntime, box_id: str) -> list[float]:
    desktop = await runtime.desktop(box_id)
    click = Click(at=Point(x=640, y=400))

    async def do_click() -> None:
        await desktop.act(0, click)
        await desktop.end_batch(0)

    clicks = await p50(200, do_click)
    pngs = await p50(30, lambda: desktop.frame(0))
    # `have` is the hash of the frame before, as a client polling the screen sends it
    # (the clicks above may have changed the screen).
    last = (await desktop.frame(0)).hash

    async def poll() -> None:
        nonlocal last
        last = (await desktop.frame(0, have=last)).hash

    return [clicks, pngs, await p50(100, poll), await p50(100, lambda: desktop.frame_hash(0))]


async def main(args: argparse.Namespace) -> None:
    subprocess.run([str(_HERE.parent / "scripts/dockerd-up")], check=True, timeout=120)
    state = Path(tempfile.mkdtemp(prefix="h7b-", dir="/tmp"))
    docker_rt = DockerRuntime(state / "boxes", "bench")
    bare_rt = DockerRuntime(state / "boxes", "bench", chromium=False)
    local_rt = LocalRuntime(
        state / "local", "bench", display_base=args.display_base, display_count=20
    )
    kept: list[tuple[DockerRuntime | LocalRuntime, str]] = []
    try:
        bootstrap(docker_rt, args.bootstrap)
        await build_times(docker_rt, not args.no_build)

        bare, _, _ = await boxes(bare_rt, args.boxes, keep_last=False)
        full, listening, docker_box = await boxes(docker_rt, args.boxes, keep_last=True)
        kept.append((docker_rt, docker_box))
        print(f"box ready from create, p50 of {args.boxes} (1 screen, 1280x800, image built):")
        spread = f"min {ms(min(full))}, max {ms(max(full))}"
        print(f"  with Chromium        {ms(statistics.median(full))}   ({spread})")
        print(f"  without Chromium     {ms(statistics.median(bare))}")
        print(f"  agent socket shows   {ms(statistics.median(listening))}")

        local_ready, _, local_box = await boxes(local_rt, 1, keep_last=True)
        kept.append((local_rt, local_box))
        docker_figures = await desktop_times(docker_rt, docker_box)
        local_figures = await desktop_times(local_rt, local_box)
        print("through the agent (Chromium on screen)     docker        local    docker-local")
        names = ("click p50", "frame (PNG) p50", "frame unchanged p50", "frame hash p50")
        for name, d, lo in zip(names, docker_figures, local_figures, strict=True):
            print(f"  {name:<22}  {ms(d)}  {ms(lo)}  {ms(d - lo)}")
        print(f"  (one local box ready in {ms(local_ready[0])})")
    finally:
        for runtime, box_id in kept:
            await runtime.delete(box_id)
        for runtime in (docker_rt, bare_rt, local_rt):
            await runtime.close()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boxes", type=int, default=5)
    parser.add_argument("--bootstrap", action="store_true", help="time a fresh debootstrap")
    parser.add_argument("--no-build", action="store_true", help="skip the no-cache build")
    parser.add_argument("--display-base", type=int, default=700)
    asyncio.run(main(parser.parse_args()))
