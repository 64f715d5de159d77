"""A real holmd in a subprocess, for the end-to-end tests of the client and the CLI and
for the benches that drive it (bench/cli.py): a free port on 127.0.0.1, a bearer token, a
temporary state dir with the local store, and the local runtime on this suite's X displays,
:260 to :279 (`HOLM_TEST_RUNTIME=memory`: the in-memory runtime instead). Stopping it
removes every box it still has."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from holm.adapters.local.runtime import LocalRuntime
from holm.client import ServerUnreachable, SyncHolmClient
from holm.errors import Gone, NotFound

# The installed `holm` console script, beside this Python.
HOLM = Path(sys.executable).with_name("holm")

DISPLAY_BASE = 260
DISPLAY_COUNT = 20
TOKEN = "cli-test-token"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
LAUNCHER = Path(__file__).with_name("serve_holmd.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Holmd:
    def __init__(self, **settings: str) -> None:
        """`settings`: more HOLM_* variables for this server."""
        self.settings = settings
        # Short: the boxes' Unix sockets live below it.
        self.state_dir = Path(tempfile.mkdtemp(prefix="hc-", dir="/tmp"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = TOKEN
        self.log_path = self.state_dir / "holmd.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def client_env(self) -> dict[str, str]:
        """What a `holm` command needs to reach this server."""
        return {"HOLM_SERVER_URL": self.url, "HOLM_SERVER_TOKEN": self.token}

    def start(self) -> None:
        env = {
            **os.environ,
            "HOLM_SERVER_ADDR": f"127.0.0.1:{self.port}",
            "HOLM_SERVER_TOKEN": self.token,
            "HOLM_STATE_DIR": str(self.state_dir),
            "HOLM_STORAGE_BACKEND": "local",
            # The feed holds events back this long; short, so that tests read them soon.
            "HOLM_EVENTS_DELAY_MS": "200",
            "HOLM_TEST_DISPLAY_BASE": str(DISPLAY_BASE),
            "HOLM_TEST_DISPLAY_COUNT": str(DISPLAY_COUNT),
            **self.settings,
        }
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                [sys.executable, str(LAUNCHER)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        with SyncHolmClient(self.url, self.token) as client:
            while True:
                if self._process.poll() is not None:
                    raise RuntimeError(f"holmd ended at start:\n{self.log()}")
                try:
                    client.health()
                    return
                except ServerUnreachable:
                    if time.monotonic() > deadline:
                        self.stop()
                        raise RuntimeError(f"holmd did not answer:\n{self.log()}") from None
                    time.sleep(0.1)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def create(self) -> str:
        """A new box with the defaults."""
        with SyncHolmClient(self.url, self.token) as client:
            return client.create_box().id

    def remove(self, *box_ids: str) -> None:
        """Remove boxes; one already removed is fine."""
        with SyncHolmClient(self.url, self.token) as client:
            for box_id in box_ids:
                with contextlib.suppress(Gone, NotFound):
                    client.delete_box(box_id)

    def remove_boxes(self) -> None:
        with SyncHolmClient(self.url, self.token) as client:
            box_ids = [box.id for box in client.list_boxes()]
        self.remove(*box_ids)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                try:
                    self.remove_boxes()
                finally:
                    os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        # Boxes outlive holmd by design: end any that a failed test left behind.
        asyncio.run(_end_boxes(self.state_dir / "boxes"))
        # The log goes with the state dir: what went wrong in the server is said first, in
        # pytest's warnings summary, where a test that got a 500 can be matched with it.
        log = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        if "Traceback" in log:
            start = max(0, log.index("Traceback") - 200)
            warnings.warn(f"holmd logged errors:\n{log[start : start + 8000]}", stacklevel=1)
        shutil.rmtree(self.state_dir, ignore_errors=True)


async def _end_boxes(boxes_dir: Path) -> None:
    if not boxes_dir.exists():
        return
    runtime = LocalRuntime(boxes_dir, display_base=DISPLAY_BASE, display_count=DISPLAY_COUNT)
    try:
        for box in await runtime.list():
            await runtime.delete(box.box_id)
    finally:
        await runtime.close()
