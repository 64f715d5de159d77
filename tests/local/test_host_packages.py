"""The host's packages as the local runtime checks them (holm/adapters/local/host_packages.py):
dpkg's own answers, asked once until its database changes, and asked off the event loop."""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path

import pytest

from holm.adapters import features as features_module
from holm.adapters.local import host_packages
from holm.adapters.local.host_packages import HostPackages
from holm.errors import Unsupported
from holm.wire.spec import DesktopSpec, Placement, Spec

from .conftest import MakeRuntime

LACKING = "holm-no-such-package"


def test_dpkg_tells_what_the_host_has_and_lacks() -> None:
    # dpkg is installed wherever dpkg-query answers.
    assert HostPackages().missing(["dpkg", LACKING, "dpkg"]) == [LACKING]


def test_dpkg_is_asked_again_only_once_its_database_changed(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text("Package: dpkg\n")
    host = HostPackages(str(status))

    assert host.missing(["dpkg", LACKING]) == [LACKING]
    assert host.missing([LACKING]) == [LACKING]
    assert host.missing(["dpkg"]) == []
    assert host.asked == 1
    # A package not asked about before is asked about alone.
    assert host.missing(["dpkg", "holm-another-one"]) == ["holm-another-one"]
    assert host.asked == 2

    # An install writes a new status file and renames it over the old one.
    renamed = tmp_path / "status.new"
    renamed.write_text("Package: dpkg\n\nPackage: bash\n")
    os.replace(renamed, status)
    assert host.missing(["dpkg", LACKING]) == [LACKING]
    assert host.asked == 3
    assert host.missing(["dpkg", LACKING]) == [LACKING]
    assert host.asked == 3

    # While dpkg runs, it journals each change into `updates/` before it rewrites status.
    # (Each change is given its own time: two made within one tick of the kernel's clock
    # could share one.)
    updates = tmp_path / "updates"
    updates.mkdir()
    os.utime(updates, ns=(1_000_000_000, 1_000_000_000))
    assert host.missing(["dpkg"]) == []
    assert host.asked == 4
    (updates / "0000").write_text("Package: bash\n")
    os.utime(updates, ns=(2_000_000_000, 2_000_000_000))
    assert host.missing(["dpkg"]) == []
    assert host.asked == 5


async def test_a_local_create_asks_dpkg_off_the_event_loop(
    make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked_from: list[threading.Thread] = []
    ask = host_packages._installed_of

    def recorded(packages: list[str]) -> set[str]:
        asked_from.append(threading.current_thread())
        return ask(packages)

    monkeypatch.setattr(host_packages, "_installed_of", recorded)
    # A package no create asked about before: dpkg is asked for it.
    lacking = f"holm-no-such-package-{uuid.uuid4().hex[:8]}"
    monkeypatch.setitem(features_module.FEATURE_PACKAGES, "audio", (lacking,))
    runtime = make_runtime(chromium=False)
    spec = Spec(desktop=DesktopSpec(features=["audio"]))

    with pytest.raises(Unsupported, match=f"feature audio needs {lacking}"):
        await runtime.create(f"box_{uuid.uuid4().hex[:12]}", spec, Placement())

    assert asked_from and threading.main_thread() not in asked_from
    assert await runtime.list() == []
