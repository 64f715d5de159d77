"""What a box's Chromium does not start (desktop_up.MEMORY_FLAGS, docs/agent.md "Memory"),
on a real Xvfb with the box's own Chromium command line."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from holm.agent.desktop import desktop_up, processes

DISPLAY_BASE = 370
MODEL_SERVICE = "--utility-sub-type=on_device_model.mojom.OnDeviceModelService"
PERFORMANCE_CLASS = "--optimization-guide-performance-class"
# Chromium's own field-trial switches: the 3 minutes it waits after its start before it
# measures the device for an on-device AI model, made 1 s, so that the test need not wait.
TRIAL = "LogOnDeviceMetricsOnStartup"
EARLY = [
    f"--force-fieldtrials={TRIAL}/Holm",
    f"--force-fieldtrial-params={TRIAL}.Holm:on_device_startup_metric_delay/1s",
]

pytestmark = pytest.mark.desktop


@pytest.fixture
def display(tmp_path: Path) -> Iterator[str]:
    number, xvfb = desktop_up.start_xvfb(0, 1280, 800, DISPLAY_BASE, tmp_path, dict(os.environ))
    yield f":{number}"
    processes.kill_group(xvfb.pid)
    xvfb.wait()


@contextlib.contextmanager
def _chromium(display: str, argv: list[str]) -> Iterator[int]:
    """Chromium started with `argv` on `display`: its pid, the leader of its process group."""
    chromium = subprocess.Popen(
        argv,
        env={**os.environ, "DISPLAY": display},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield chromium.pid
    finally:
        processes.kill_group(chromium.pid)
        chromium.wait()


def _command_lines(group: int) -> list[str]:
    # -ww: whole command lines; without a terminal ps cuts them at 80 columns.
    listed = subprocess.run(
        ["ps", "-ww", "-o", "args=", "-g", str(group)], capture_output=True, text=True
    )
    return listed.stdout.splitlines()


def _starts_the_model_service(display: str, argv: list[str], within_s: float) -> bool:
    """Whether Chromium, started with `argv` and the early measure, starts the on-device
    model service within `within_s`."""
    # Chromium reads its last --enable-features only: the trial's feature joins the box's.
    argv = [f"{a},{TRIAL}<{TRIAL}" if a.startswith("--enable-features=") else a for a in argv]
    with _chromium(display, [*argv, *EARLY]) as group:
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            if any(MODEL_SERVICE in line for line in _command_lines(group)):
                return True
            time.sleep(0.25)
        return False


def _kinds_once_rendering(display: str, argv: list[str]) -> Counter[str]:
    """How many of each kind of process (`--type`, "browser" for none) Chromium started
    with `argv` has once its page has a renderer, and after Chromium is done starting."""
    with _chromium(display, argv) as group:
        deadline = time.monotonic() + 30
        while not any("--type=renderer" in line for line in _command_lines(group)):
            assert time.monotonic() < deadline, "Chromium started no renderer within 30 s"
            time.sleep(0.25)
        # Chromium starts its helpers within its first second or so; the GPU process and
        # the zygotes come before the first renderer.
        time.sleep(2)
        kinds: Counter[str] = Counter()
        for line in _command_lines(group):
            words = line.split()
            if words and words[0].endswith("/chromium"):
                types = [w.partition("=")[2] for w in words if w.startswith("--type=")]
                kinds[types[0] if types else "browser"] += 1
        return kinds


def test_a_boxs_chromium_starts_no_on_device_model_service(display: str, tmp_path: Path) -> None:
    """Chromium measures the device for an on-device AI model 3 minutes after its start,
    in a process it then keeps (~8.5 MiB a box); the box's command line says the class."""
    argv = desktop_up.chromium_argv(str(tmp_path), 0)
    assert any(a.startswith(PERFORMANCE_CLASS) for a in argv)
    # Without that one switch, the same Chromium starts it: the test can tell.
    without = [a for a in argv if not a.startswith(PERFORMANCE_CLASS)]
    assert _starts_the_model_service(display, without, 20)
    assert not _starts_the_model_service(display, argv, 10)


def test_a_boxs_chromium_composites_in_its_browser_with_one_zygote(
    display: str, tmp_path: Path
) -> None:
    """No GPU process and no unsandboxed zygote (which only forked it): two Chromium
    images fewer, each with its own relocated copy of Chromium's tables."""
    flags = ("--in-process-gpu", "--no-unsandboxed-zygote")
    argv = desktop_up.chromium_argv(str(tmp_path / "box"), 0)
    kinds = _kinds_once_rendering(display, argv)
    assert kinds["gpu-process"] == 0 and kinds["zygote"] == 1, kinds
    # Without the two switches, the same Chromium starts both: the test can tell.
    without = [a for a in desktop_up.chromium_argv(str(tmp_path / "other"), 0) if a not in flags]
    kinds = _kinds_once_rendering(display, without)
    assert kinds["gpu-process"] == 1 and kinds["zygote"] == 2, kinds
