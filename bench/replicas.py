"""Figures of several holmd on one PostgreSQL (docs/scale.md#replicas), in one run. Prints
numbers; asserts nothing.

    .venv/bin/python bench/replicas.py [--kills 10] [--skip-take-over] [--clicks-only]
                                       [--against /path/to/another/checkout]

Starts a private PostgreSQL (scripts/postgres-up, under /tmp, on a free loopback port) and
real holmd processes (tests/kits/holmd.py) on it, blobs and frames in one shared folder
(`HOLM_BLOB_URL=file://…`, as a bucket would be), and stops everything at the end.

- A recorded click through a holmd that does not own the box beside one through its
  owner, one of each in turn: the median and p90 of one click each (in-memory runtime:
  what is measured is the server's path, recording included, not a desktop), the
  difference, and the forwarding holmd's processor time a click; with `--against`, a
  pair of holmd of another checkout's code too (the code before a change), every
  pair's clicks in turn. Beside it the floor of one hop on this machine: a bare aiohttp
  answer asked directly and through a bare aiohttp process that sends requests on
  (`--clicks-only`: these alone).
- Three holmd against one: actions/s from 32 clients on 12 boxes (in-memory runtime),
  the boxes made through each holmd in turn and each client sending to every holmd in
  turn (so two of three requests are forwarded), beside one holmd with every box and
  client.
- Take-over after SIGKILL: two holmd on the Docker Engine (scripts/dockerd-up), one box;
  its owner is killed, and the time until a survivor holds its lease and `adopted` is in
  its trace is taken; the killed one is started again, and the next kill is of the new
  owner. The p50 and max over `--kills` kills, with `HOLM_LEASE_MS` as given.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent / "tests"))

import aiohttp  # noqa: E402
import asyncpg  # noqa: E402
from aiohttp import web  # noqa: E402
from kits.holmd import TOKEN, Holmd, free_port  # noqa: E402

from holm.config import server_id_of  # noqa: E402

REPO = _HERE.parent
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CLICKS = 400
LOAD_SECS = 8.0
LOAD_BOXES = 12
LOAD_CLIENTS = 32


async def fresh_database(url: str) -> str:
    name = "bench_" + os.urandom(4).hex()
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return url.rpartition("/")[0] + "/" + name


def replicas(count: int, db: str, objects: Path, **settings: str) -> list[Holmd]:
    servers = [
        Holmd(
            HOLM_STORAGE_BACKEND="postgres",
            HOLM_DATABASE_URL=db,
            HOLM_BLOB_URL=f"file://{objects}",
            **settings,
        )
        for _ in range(count)
    ]
    for server in servers:
        server.start()
    return servers


async def close(servers: list[Holmd]) -> None:
    # Holmd.close runs its own event loop: in a thread of its own.
    for server in servers:
        await asyncio.to_thread(server.close)


def click_body(n: int) -> dict[str, object]:
    return {"actions": [{"type": "click", "at": {"x": 10 + n % 500, "y": 20}}]}


async def create(http: aiohttp.ClientSession, server: Holmd) -> str:
    async with http.post(f"{server.url}/v1/boxes", json={}) as answer:
        body = await answer.json()
        assert answer.status == 200, body
        return str(body["id"])


async def click(http: aiohttp.ClientSession, server: Holmd, box: str, n: int) -> float:
    """One recorded click, in ms."""
    start = time.perf_counter()
    async with http.post(
        f"{server.url}/v1/boxes/{box}/screens/0/actions", json=click_body(n)
    ) as answer:
        await answer.read()
        assert answer.status == 200
    return (time.perf_counter() - start) * 1000


def spread(name: str, times: list[float]) -> str:
    p90 = statistics.quantiles(times, n=10)[-1]
    return f"  {name:<30} p50 {statistics.median(times):6.2f} ms  p90 {p90:6.2f} ms"


async def forwarded_click(url: str, objects: Path, against: list[Path]) -> None:
    """A pair of holmd (an owner, another) of this tree's code, and one of each tree in
    `against` (another checkout: the code before a change), side by side: their clicks
    in turn, so that the machine's load, which varies from second to second here, weighs
    on every pair alike."""
    trees = [(f"{tree} (--against)", tree) for tree in against] + [("this tree", REPO)]
    pairs: list[tuple[str, list[Holmd]]] = []
    try:
        for name, tree in trees:
            db = await fresh_database(url)
            pairs.append((name, replicas(2, db, objects, runtime="memory", PYTHONPATH=str(tree))))
        async with aiohttp.ClientSession(headers=AUTH) as http:
            boxes = [await create(http, servers[0]) for _, servers in pairs]
            for n in range(CLICKS // 4):  # warm every path first
                for (_, (owner, other)), box in zip(pairs, boxes, strict=True):
                    await click(http, owner, box, n)
                    await click(http, other, box, n)
            mine: list[list[float]] = [[] for _ in pairs]
            forwarded: list[list[float]] = [[] for _ in pairs]
            for n in range(3 * CLICKS):
                for index, ((_, (owner, other)), box) in enumerate(zip(pairs, boxes, strict=True)):
                    mine[index].append(await click(http, owner, box, n))
                    forwarded[index].append(await click(http, other, box, n))
            busy = [
                await click_cpu(http, servers[1], box)
                for (_, servers), box in zip(pairs, boxes, strict=True)
            ]
        print(f"a recorded click, {3 * CLICKS} each, in turn (in-memory runtime):")
        for index, (name, _) in enumerate(pairs):
            print(f" {name}:")
            print(spread("through its owner", mine[index]))
            print(spread("through another holmd", forwarded[index]))
            added = statistics.median(forwarded[index]) - statistics.median(mine[index])
            print(f"  forwarding adds                p50 {added:+6.2f} ms")
            print(f"  the forwarding holmd's processor time: {busy[index]:.2f} ms a click")
    finally:
        for _, servers in pairs:
            await close(servers)
    await bare_hop()


async def click_cpu(http: aiohttp.ClientSession, forwarder: Holmd, box: str) -> float:
    """The processor time the forwarding holmd spends on one click it sends on, which the
    machine's load does not change (the latency it adds is this time, stretched by the
    wait for a core): its time over clicks through it, less what it spends meanwhile when
    idle (its heartbeat, its feed follower)."""
    pid = forwarder.pid
    idle_start, idle_cpu = time.perf_counter(), cpu_ms(pid)
    await asyncio.sleep(3.0)
    idle_rate = (cpu_ms(pid) - idle_cpu) / (time.perf_counter() - idle_start)
    busy_start, busy_cpu = time.perf_counter(), cpu_ms(pid)
    for n in range(CLICKS):
        await click(http, forwarder, box, n)
    busy = cpu_ms(pid) - busy_cpu - idle_rate * (time.perf_counter() - busy_start)
    return busy / CLICKS


async def bare_hop() -> None:
    """The floor of one more hop on this machine: a bare aiohttp answer (one tiny JSON
    body) asked directly, and through a bare aiohttp process that sends each request on
    over one kept-alive connection, as forwarding does (no holm code in either)."""
    target, proxy = free_port(), free_port()
    started = [
        subprocess.Popen([sys.executable, __file__, "--serve-bare", str(target)]),
        subprocess.Popen([sys.executable, __file__, "--serve-hop", str(proxy), str(target)]),
    ]
    try:
        async with aiohttp.ClientSession() as http:
            for port in (target, proxy):
                for _ in range(200):
                    try:
                        async with http.get(f"http://127.0.0.1:{port}/") as answer:
                            await answer.read()
                        break
                    except aiohttp.ClientConnectionError:
                        await asyncio.sleep(0.05)
            direct: list[float] = []
            hopped: list[float] = []
            hop_cpu = cpu_ms(started[1].pid)
            for n in range(3 * CLICKS + CLICKS // 4):
                for port, times in ((target, direct), (proxy, hopped)):
                    start = time.perf_counter()
                    async with http.post(f"http://127.0.0.1:{port}/", json=click_body(n)) as a:
                        await a.read()
                    if n >= CLICKS // 4:
                        times.append((time.perf_counter() - start) * 1000)
            hop_cpu = cpu_ms(started[1].pid) - hop_cpu
    finally:
        for process in started:
            process.terminate()
            process.wait()
    print("the floor of one hop here, bare aiohttp (no holm code), in turn:")
    print(spread("asked directly", direct))
    print(spread("through a bare aiohttp hop", hopped))
    added = statistics.median(hopped) - statistics.median(direct)
    print(f"  the hop adds                   p50 {added:+6.2f} ms")
    print(f"  the hop's processor time: {hop_cpu / (3 * CLICKS + CLICKS // 4):.2f} ms a request")


def cpu_ms(pid: int) -> float:
    """The processor time process `pid` has used, user and system, in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def serve_bare(port: int) -> None:
    async def answer(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_route("*", "/", answer)
    web.run_app(app, host="127.0.0.1", port=port, print=None)


def serve_hop(port: int, target: int) -> None:
    async def send_on(request: web.Request) -> web.Response:
        body = await request.read()
        async with request.app[HOP].request(
            request.method, f"http://127.0.0.1:{target}/", data=body, headers=request.headers
        ) as upstream:
            return web.Response(status=upstream.status, body=await upstream.read())

    async def session(app: web.Application) -> AsyncIterator[None]:
        app[HOP] = aiohttp.ClientSession()
        yield
        await app[HOP].close()

    app = web.Application()
    app.cleanup_ctx.append(session)
    app.router.add_route("*", "/", send_on)
    web.run_app(app, host="127.0.0.1", port=port, print=None)


HOP = web.AppKey("hop", aiohttp.ClientSession)


async def actions_per_sec(servers: list[Holmd]) -> float:
    async with aiohttp.ClientSession(headers=AUTH, connector=aiohttp.TCPConnector(limit=0)) as http:
        boxes = [await create(http, servers[n % len(servers)]) for n in range(LOAD_BOXES)]
        done = 0
        until = time.perf_counter() + LOAD_SECS

        async def client(number: int) -> None:
            nonlocal done
            n = number
            while time.perf_counter() < until:
                n += 1
                server = servers[n % len(servers)]
                box = boxes[(number + n) % len(boxes)]
                async with http.post(
                    f"{server.url}/v1/boxes/{box}/screens/0/actions", json=click_body(n)
                ) as answer:
                    await answer.read()
                    if answer.status == 200:
                        done += 1

        start = time.perf_counter()
        await asyncio.gather(*(client(n) for n in range(LOAD_CLIENTS)))
        return done / (time.perf_counter() - start)


async def three_against_one(url: str, objects: Path) -> None:
    print(f"actions/s, {LOAD_CLIENTS} clients on {LOAD_BOXES} boxes (in-memory runtime):")
    for count in (1, 3):
        servers = replicas(count, await fresh_database(url), objects, runtime="memory")
        try:
            rate = await actions_per_sec(servers)
        finally:
            await close(servers)
        print(f"  {count} holmd: {rate:8,.0f} actions/s")


async def lease_owner(db: str, box: str) -> str | None:
    conn = await asyncpg.connect(db)
    try:
        owner = await conn.fetchval("SELECT owner FROM holm_box_leases WHERE box = $1", box)
        return None if owner is None else str(owner)
    finally:
        await conn.close()


async def adoptions(conn: asyncpg.Connection, box: str) -> int:
    found = await conn.fetchval(
        'SELECT count(*) FROM holm_entries WHERE trace = $1 AND line LIKE \'%"kind":"adopted"%\'',
        box,
    )
    return int(found)


async def take_over(url: str, objects: Path, kills: int, lease_ms: int) -> None:
    db = await fresh_database(url)
    servers = replicas(2, db, objects, runtime="docker", HOLM_LEASE_MS=str(lease_ms))
    times = []
    try:
        async with aiohttp.ClientSession(headers=AUTH) as http:
            box = await create(http, servers[0])
        conn = await asyncpg.connect(db)
        try:
            by_id = {server_id_of(s.state_dir): s for s in servers}
            for _ in range(kills):
                owner = await lease_owner(db, box)
                assert owner is not None
                victim = by_id[owner]
                adopted = await adoptions(conn, box)
                victim.kill()
                start = time.perf_counter()
                while True:
                    now_owner = await conn.fetchval(
                        "SELECT owner FROM holm_box_leases WHERE box = $1", box
                    )
                    if now_owner != owner and await adoptions(conn, box) > adopted:
                        break
                    await asyncio.sleep(0.01)
                times.append(time.perf_counter() - start)
                victim.start()
        finally:
            await conn.close()
    finally:
        await close(servers)
    print(f"take-over after SIGKILL, HOLM_LEASE_MS={lease_ms}, {len(times)} kills (docker box):")
    print(
        f"  p50 {statistics.median(times):.2f} s  max {max(times):.2f} s  (min {min(times):.2f} s)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--lease-ms", type=int, default=6000)
    parser.add_argument("--skip-take-over", action="store_true")
    parser.add_argument("--clicks-only", action="store_true")
    parser.add_argument(
        "--against",
        type=Path,
        action="append",
        default=[],
        help="another checkout of holm (the code before a change): its holmd's forwarded "
        "clicks measured beside this tree's, in the same run",
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="holm-bench-replicas-", dir="/tmp"))
    pg_dir = Path(tempfile.mkdtemp(prefix="holm-bench-pg-", dir="/tmp"))
    env = {**os.environ, "HOLM_PG_DIR": str(pg_dir), "HOLM_PG_PORT": str(free_port())}
    subprocess.run([str(REPO / "scripts/postgres-up")], env=env, check=True, capture_output=True)
    try:
        url = (pg_dir / "url").read_text().strip()
        objects = root / "objects"
        objects.mkdir()
        await forwarded_click(url, objects, args.against)
        if args.clicks_only:
            return
        await three_against_one(url, objects)
        if not args.skip_take_over:
            subprocess.run([str(REPO / "scripts/dockerd-up")], check=True, capture_output=True)
            await take_over(url, objects, args.kills, args.lease_ms)
    finally:
        env["HOLM_PG_PURGE"] = "1"
        subprocess.run([str(REPO / "scripts/postgres-down")], env=env, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(pg_dir, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve-bare"]:
        serve_bare(int(sys.argv[2]))
    elif sys.argv[1:2] == ["--serve-hop"]:
        serve_hop(int(sys.argv[2]), int(sys.argv[3]))
    else:
        asyncio.run(main())
