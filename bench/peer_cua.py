"""holm beside cua's computer-server, the peer issue 14 measured against: click, move, type 10
characters and a PNG of the whole screen, each side with Chromium showing the same page
on a 1280×800 Xvfb screen; prints figures, asserts nothing.

    .venv/bin/python bench/peer_cua.py [--rounds 200] [--cua-venv /tmp/cua-venv]
        [--without-step-frames]

cua is not a dependency of holm. The bench runs it from a virtualenv made once with

    python3 -m venv /tmp/cua-venv
    /tmp/cua-venv/bin/pip install cua-computer-server "fastapi<0.116"

(its release 0.1.25 passes FastAPI an argument that FastAPI 0.116 and later refuse). cua
runs on its own Xvfb display with openbox and Chromium (a holm box's flags and window),
bound to 127.0.0.1, driven through its HTTP `/cmd` on one keep-alive connection, at its
fastest (CUA_MAIN): pyautogui's pause is 0, where by default it sleeps 100 ms after every
call, and its screenshots are pillow's grab in memory. holm runs in its own process
(bench/http_api.py's `served`, durable local store) and answers each action once it is
fsynced in the box's trace; cua records nothing. A second holmd beside it keeps its trace
in the memory store (nothing durable): the same work but the fsync.

Each round sends one of each operation to both, in turns that swap each round, so both
columns see the same load: a click, 10 characters typed right after it (as an agent types
into the field it clicked), a move, 10 characters typed again, and a frame asked 0.1 s
after one letter was typed, so that each side encodes a screen that changed. holm's keys
wait until the page has taken the last click (docs/agent.md, "Input"): Chromium can take
the first keys before the click that moves the focus. cua sends them at once.

Prints p50 and p95 in milliseconds, and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
from click_path import AT, CLIENTS, LEAN, PAGE, PAINTED_S
from click_path import Side as HolmSide
from http_api import percentile, served
from lean_http import LeanHttp

from holm.agent.desktop.desktop_up import CHROMIUM_FLAGS, CHROMIUM_WINDOW_FLAGS, MEMORY_FLAGS

DISPLAY = 470
SIZE = (1280, 800)
TEXT = "abcdefghij"
TYPE_AFTER_CLICK = "type 10 characters right after the click"
FRAME = "frame after a letter (PNG)"
KINDS = ("click", TYPE_AFTER_CLICK, "move", "type 10 characters", FRAME)
# cua's server, started with pyautogui's pause off and pyscreeze told to grab the screen
# with pillow (it does so only where gnome-screenshot is installed; else it runs scrot, a
# process per frame): cua at its fastest.
CUA_MAIN = (
    "import pyautogui, pyscreeze; pyautogui.PAUSE = 0; pyscreeze.GNOMESCREENSHOT_EXISTS = True; "
    "from computer_server.cli import main; main()"
)


class Cua:
    """cua's computer-server on its own display."""

    name = "cua computer-server"

    def __init__(self, base: str, session: aiohttp.ClientSession) -> None:
        self.base = base
        self.session = session
        self.lean = LeanHttp(base)
        self.times: dict[tuple[str, str], list[float]] = {
            (kind, client): [] for kind in KINDS for client in CLIENTS
        }

    async def cmd(self, command: str, client: str, **params: Any) -> dict[str, Any]:
        body = {"command": command, "params": params}
        if client == LEAN:
            text = self.lean.request("POST", "/cmd", body)[1].decode()
        else:
            async with self.session.post(f"{self.base}/cmd", json=body) as response:
                text = await response.text()
        # One server-sent event: "data: {...}".
        answer: dict[str, Any] = json.loads(text.partition("data: ")[2])
        assert answer.get("success"), answer
        return answer

    async def operation(self, kind: str, n: int, client: str) -> None:
        x, y = AT[0] + n % 100, AT[1] + n % 50
        if kind == "move":
            await self.cmd("move_cursor", client, x=x, y=y)
        elif kind == "click":
            await self.cmd("left_click", client, x=x, y=y)
        elif kind != FRAME:
            await self.cmd("type_text", client, text=TEXT)
        else:
            await self.cmd("type_text", client, text="x")
            await asyncio.sleep(PAINTED_S)
            began = time.perf_counter()
            await self.cmd("screenshot", client)
            self.times[kind, client].append((time.perf_counter() - began) * 1000)


class Holm(HolmSide):
    """holmd and its box, with the same operations."""

    def __init__(self, name: str, base: str, pid: int, session: aiohttp.ClientSession) -> None:
        super().__init__(name, base, pid, session)
        self.times = {(kind, client): [] for kind in KINDS for client in CLIENTS}

    async def operation(self, kind: str, n: int, client: str) -> None:
        x, y = AT[0] + n % 100, AT[1] + n % 50
        if kind == "move":
            await self.batch({"type": "move", "to": {"x": x, "y": y}}, client=client)
        elif kind == "click":
            await self.batch({"type": "click", "at": {"x": x, "y": y}}, client=client)
        elif kind != FRAME:
            await self.batch({"type": "type", "text": TEXT}, client=client)
        else:
            self.times[kind, client].append(await self.painted_frame(client))


async def timed(side: Cua | Holm, kind: str, n: int, keep: bool) -> None:
    """One `kind` sent by each client, in an order that swaps each round."""
    for client in CLIENTS if n % 2 else CLIENTS[::-1]:
        if kind == FRAME:
            before = len(side.times[kind, client])
            await side.operation(kind, n, client)
            if not keep:
                del side.times[kind, client][before:]
            continue
        began = time.perf_counter()
        await side.operation(kind, n, client)
        if keep:
            side.times[kind, client].append((time.perf_counter() - began) * 1000)


async def bench(holmds: list[tuple[str, str, int]], cua_base: str, rounds: int, warm: int) -> None:
    async with aiohttp.ClientSession() as session:
        holms = [Holm(name, base, pid, session) for name, base, pid in holmds]
        cua = Cua(cua_base, session)
        sides: list[Cua | Holm] = [*holms, cua]
        for holm in holms:
            await holm.start()
        # The text field has the focus on every side before the first round.
        await cua.cmd("left_click", LEAN, x=AT[0], y=AT[1])
        try:
            for n in range(warm + rounds):
                # Each round in another order, so every side meets the same load.
                turn = n % len(sides)
                for side in sides[turn:] + sides[:turn]:
                    for kind in KINDS:
                        await timed(side, kind, n, n >= warm)
        finally:
            for holm in holms:
                await holm.end()
            cua.lean.close()
    print(f"\np50 / p95 ms, one request at a time, {rounds} rounds{'':14}", end="")
    print("".join(f"{side.name:>26}" for side in sides))
    for kind in KINDS:
        for client in CLIENTS:
            cells = "".join(
                f"{statistics.median(t):>17.2f} / {percentile(t, 0.95):6.2f}"
                for t in (s.times[kind, client] for s in sides)
            )
            print(f"  {f'{kind}, {client}':<56}{cells}")
    print(f"load average after: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


@contextlib.contextmanager
def cua_desktop(venv: Path) -> Iterator[str]:
    """Xvfb, openbox, Chromium on PAGE and cua's server on them: the server's URL."""
    home = Path(tempfile.mkdtemp(prefix="holm-bench-cua-", dir="/tmp"))
    env = {**os.environ, "DISPLAY": f":{DISPLAY}", "HOME": str(home)}
    # With CONTAINER_NAME set, cua asks for cloud credentials and pings its cloud.
    env.pop("CONTAINER_NAME", None)
    started: list[subprocess.Popen[bytes]] = []

    def start(argv: list[str]) -> None:
        quiet = subprocess.DEVNULL
        started.append(
            subprocess.Popen(argv, env=env, stdout=quiet, stderr=quiet, start_new_session=True)
        )

    try:
        screen = f"{SIZE[0]}x{SIZE[1]}x24"
        start(["Xvfb", f":{DISPLAY}", "-screen", "0", screen, "-nolisten", "tcp"])
        _wait_for(lambda: Path(f"/tmp/.X11-unix/X{DISPLAY}").exists(), "Xvfb")
        start(["openbox"])
        profile = f"--user-data-dir={home / 'chromium'}"
        flags = [*CHROMIUM_FLAGS, *MEMORY_FLAGS, *CHROMIUM_WINDOW_FLAGS, profile]
        start(["/usr/bin/chromium", *flags, PAGE])
        port = _free_port()
        server = [str(venv / "bin" / "python"), "-c", CUA_MAIN, "--host", "127.0.0.1"]
        start([*server, "--port", str(port), "--log-level", "warning"])
        base = f"http://127.0.0.1:{port}"
        _wait_for(lambda: _answers(f"{base}/status"), "cua's server")
        # Chromium's window up and painted.
        time.sleep(5)
        yield base
    finally:
        for process in reversed(started):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        shutil.rmtree(home, ignore_errors=True)


def _wait_for(ready: Any, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not come up")
        time.sleep(0.1)


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--cua-venv", type=Path, default=Path("/tmp/cua-venv"))
    parser.add_argument(
        "--without-step-frames",
        action="store_true",
        help="a third holmd, durable, that records no screen before each step "
        "(HOLM_FRAME_BEFORE_STEPS=off): what that recording costs each operation",
    )
    args = parser.parse_args()
    if not (args.cua_venv / "bin" / "python").exists():
        sys.exit(f"no cua virtualenv at {args.cua_venv}: see this script's docstring")
    with contextlib.ExitStack() as stack:
        holmds = []
        sides = [
            ("holm (durable trace)", ["--chromium"]),
            ("holm (memory store)", ["--chromium", "--memory-store"]),
        ]
        if args.without_step_frames:
            sides.append(
                ("holm (durable, no step frames)", ["--chromium", "--no-frame-before-steps"])
            )
        for name, flags in sides:
            base, _, pid = stack.enter_context(served("h14-cua-", flags))
            holmds.append((name, base, pid))
        cua = stack.enter_context(cua_desktop(args.cua_venv))
        asyncio.run(bench(holmds, cua, args.rounds, warm=10))


if __name__ == "__main__":
    main()
