"""A real holmd in a subprocess, for the tests that call it from outside (the client's, the
CLI's, the security guards') and the benches that drive it (bench/cli.py): holmd's own
`main` on a free port of 127.0.0.1, with its runtimes replaced by the local runtime on this
suite's X displays or the in-memory double (kits/serve_holmd.py), in an environment that
holds none of this process's HOLM_* settings. It is started by `start` and ended by its pid
(`stop`, as often as a test likes: a restart keeps its state dir); `close` also removes the
boxes it still has, and its state dir when the state dir is its own."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path
from typing import Any, Literal

from holm.adapters.local.runtime import LocalRuntime
from holm.client import SyncHolmClient
from holm.errors import Gone, NotFound

ROOT = Path(__file__).resolve().parents[2]
# The installed console scripts, beside this Python.
HOLM = Path(sys.executable).with_name("holm")
HOLMD = Path(sys.executable).with_name("holmd")
LAUNCHER = Path(__file__).with_name("serve_holmd.py")

DISPLAY_BASE = 260
DISPLAY_COUNT = 20
TOKEN = "cli-test-token"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clean_env(**settings: str) -> dict[str, str]:
    """This process's environment without any HOLM_* setting, with the worktree's holm."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("HOLM_")}
    return {**env, "PYTHONPATH": str(ROOT), **settings}


def call(
    url: str, method: str = "GET", token: str | None = None, body: bytes | None = None
) -> tuple[int, Any]:
    """One request with `token` (None: no Authorization); the status and JSON body."""
    request = urllib.request.Request(url, method=method, data=body)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


class Holmd:
    """One holmd process on 127.0.0.1.

    - `runtime`: "local" (the local runtime on X displays from `display_base`), "memory"
      (the in-memory double: a box in milliseconds, nothing inside it) or "docker"
      (holmd's own runtimes, boxes on the Docker Engine);
    - `token`: its bearer token (HOLM_SERVER_TOKEN); None: it makes its own in its state
      dir, as holmd does, and `token` reads it there;
    - `state_dir`: where it keeps its state; None: a short temporary folder of its own;
    - `settings`: more HOLM_* variables, over these defaults: the local store, events
      served after 200 ms, scheduled work done by the server itself."""

    def __init__(
        self,
        state_dir: Path | None = None,
        *,
        runtime: Literal["local", "memory", "docker"] = "local",
        token: str | None = TOKEN,
        port: int | None = None,
        display_base: int = DISPLAY_BASE,
        display_count: int = DISPLAY_COUNT,
        **settings: str,
    ) -> None:
        self.own = state_dir is None
        if state_dir is None:
            # Short: the boxes' Unix sockets live below it.
            state_dir = Path(tempfile.mkdtemp(prefix="hc-", dir="/tmp")) / "state"
            state_dir.mkdir()
        self.state_dir = state_dir
        self.runtime = runtime
        self.given_token = token
        self.port = port or free_port()
        # Beside the state dir, so that a test can read it after the server is gone.
        self.log_path = state_dir.parent / f"holmd-{self.port}.log"
        self.url = f"http://127.0.0.1:{self.port}"
        self.display_base, self.display_count = display_base, display_count
        self.settings = settings
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def token(self) -> str | None:
        """The token it was given, or the one it made in its state dir (None: auth off)."""
        if self.given_token is not None:
            return self.given_token
        made = self.state_dir / "token"
        return made.read_text().strip() if made.exists() else None

    @property
    def pid(self) -> int:
        """The process id of holmd, running."""
        assert self._process is not None, "holmd is not running"
        return self._process.pid

    @property
    def client_env(self) -> dict[str, str]:
        """What a `holm` command needs to reach this server."""
        return {"HOLM_SERVER_URL": self.url, "HOLM_SERVER_TOKEN": self.token or ""}

    def start(self) -> None:
        settings = {
            "HOLM_SERVER_ADDR": f"127.0.0.1:{self.port}",
            "HOLM_STATE_DIR": str(self.state_dir),
            "HOLM_STORAGE_BACKEND": "local",
            "HOLM_DEFAULT_RUNTIME": self.runtime,
            # The feed holds events back this long; short, so that tests read them soon.
            "HOLM_EVENTS_DELAY_MS": "200",
            "HOLM_TEST_RUNTIME": self.runtime,
            "HOLM_TEST_DISPLAY_BASE": str(self.display_base),
            "HOLM_TEST_DISPLAY_COUNT": str(self.display_count),
        }
        if self.given_token is not None:
            settings["HOLM_SERVER_TOKEN"] = self.given_token
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [sys.executable, str(LAUNCHER)],
                env=clean_env(**{**settings, **self.settings}),
                cwd=self.state_dir.parent,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"holmd ended at start:\n{self.log()}")
            with contextlib.suppress(urllib.error.URLError, ConnectionError):
                if call(f"{self.url}/v1/health")[0] == 200:
                    return
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"holmd did not answer:\n{self.log()}")
            time.sleep(0.05)

    def stop(self) -> None:
        """End the process (SIGTERM, then SIGKILL past STOP_TIMEOUT_S); its boxes and state
        stay, as holmd's do."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def kill(self) -> None:
        """SIGKILL holmd itself (not its group): it dies mid-work, as a crash does; its
        boxes and state stay."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()

    def close(self) -> None:
        """Remove its boxes, stop it, end any box a failed test left behind, say what the
        server logged as an error (in pytest's warnings summary, where a test that got a
        500 can be matched with it), and remove its state dir when it is its own."""
        try:
            if self._process is not None and self._process.poll() is None:
                self.remove_boxes()
        finally:
            self.stop()
            asyncio.run(self._end_boxes())
        log = self.log()
        if "Traceback" in log:
            start = max(0, log.index("Traceback") - 200)
            warnings.warn(f"holmd logged errors:\n{log[start : start + 8000]}", stacklevel=1)
        if self.own:
            shutil.rmtree(self.state_dir.parent, ignore_errors=True)

    async def _end_boxes(self) -> None:
        """Boxes outlive holmd by design: end the local ones that are still there."""
        boxes_dir = self.state_dir / "boxes"
        if self.runtime != "local" or not boxes_dir.exists():
            return
        runtime = LocalRuntime(
            boxes_dir, display_base=self.display_base, display_count=self.display_count
        )
        try:
            for box in await runtime.list():
                await runtime.delete(box.box_id)
        finally:
            await runtime.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    # Calls

    def get(self, path: str) -> Any:
        status, body = call(self.url + path, token=self.token)
        assert status == 200, body
        return body

    def create(self) -> str:
        """A new box with the defaults."""
        status, body = call(f"{self.url}/v1/boxes", "POST", self.token, b"{}")
        assert status == 200, body
        return str(body["id"])

    def remove(self, *box_ids: str) -> None:
        """Remove boxes; one already removed is fine."""
        with SyncHolmClient(self.url, self.token) as client:
            for box_id in box_ids:
                with contextlib.suppress(Gone, NotFound):
                    client.delete_box(box_id)

    def remove_boxes(self) -> None:
        self.remove(*[box["id"] for box in self.get("/v1/boxes")["boxes"]])
