"""What a box's Chromium does not start (desktop_up.MEMORY_FLAGS, docs/agent.md "Memory"),
on a real Xvfb with the box's own Chromium command line."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from holm.adapters.agent import desktop_up, processes

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


def _starts_the_model_service(display: str, argv: list[str], within_s: float) -> bool:
    """Whether Chromium, started with `argv` and the early measure, starts the on-device
    model service within `within_s`."""
    # Chromium reads its last --enable-features only: the trial's feature joins the box's.
    argv = [f"{a},{TRIAL}<{TRIAL}" if a.startswith("--enable-features=") else a for a in argv]
    chromium = subprocess.Popen(
        [*argv, *EARLY],
        env={**os.environ, "DISPLAY": display},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            # -ww: whole command lines; without a terminal ps cuts them at 80 columns.
            group = subprocess.run(
                ["ps", "-ww", "-o", "args=", "-g", str(chromium.pid)],
                capture_output=True,
                text=True,
            )
            if MODEL_SERVICE in group.stdout:
                return True
            time.sleep(0.25)
        return False
    finally:
        processes.kill_group(chromium.pid)
        chromium.wait()


def test_a_boxs_chromium_starts_no_on_device_model_service(display: str, tmp_path: Path) -> None:
    """Chromium measures the device for an on-device AI model 3 minutes after its start,
    in a process it then keeps (~8.5 MiB a box); the box's command line says the class."""
    argv = desktop_up.chromium_argv(str(tmp_path), 0)
    assert any(a.startswith(PERFORMANCE_CLASS) for a in argv)
    # Without that one switch, the same Chromium starts it: the test can tell.
    without = [a for a in argv if not a.startswith(PERFORMANCE_CLASS)]
    assert _starts_the_model_service(display, without, 20)
    assert not _starts_the_model_service(display, argv, 10)
