"""What a local Wayland box's sandbox gives its processes beyond an X11 box's
(docs/security.md): its root keeps CAP_SETUID beside CAP_SETGID, over the box's own ids only,
and sway runs as the box's uid 1000, which on the host is one of the box's range."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from desktop_kit import run
from runtime_kit import runtime_named

from holm.adapters.local import procs
from holm.adapters.local.box_ids import range_of
from holm.adapters.local.records import BoxPaths, read_record
from holm.adapters.local.runtime import LocalRuntime
from holm.wire.spec import DesktopSpec, Placement, Spec

pytestmark = pytest.mark.desktop

CAP_SETGID, CAP_SETUID = 6, 7


@pytest.fixture
async def wayland_box() -> AsyncIterator[tuple[LocalRuntime, str]]:
    state_dir = Path(tempfile.mkdtemp(prefix="hw-", dir="/tmp"))
    box_id = f"box_{uuid.uuid4().hex[:12]}"
    spec = Spec(desktop=DesktopSpec(server="wayland", features=["x11_apps"]))
    try:
        async with runtime_named("local", state_dir, "wayland-security") as runtime:
            assert isinstance(runtime, LocalRuntime)
            await runtime.create(box_id, spec, Placement())
            try:
                yield runtime, box_id
            finally:
                await runtime.delete(box_id)
                await runtime.close()
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


def _uids(pid: int) -> list[int]:
    status = Path(f"/proc/{pid}/status").read_text()
    return [
        int(u) for u in next(s for s in status.splitlines() if s.startswith("Uid:")).split()[1:]
    ]


async def test_a_wayland_box_keeps_setuid_and_setgid_only_and_sway_is_not_root(
    wayland_box: tuple[LocalRuntime, str],
) -> None:
    runtime, box_id = wayland_box
    desktop = await runtime.desktop(box_id)
    caps = (await run(desktop, "grep", "CapEff", "/proc/self/status")).stdout.split()[1]
    assert caps == f"{1 << CAP_SETGID | 1 << CAP_SETUID:016x}"
    sways = await run(
        desktop, "sh", "-c", "for p in $(pgrep -x sway); do stat -c %u /proc/$p; done"
    )
    assert sways.stdout.split() == ["1000"], sways
    record = read_record(BoxPaths(runtime.boxes_dir, box_id).record)
    assert record is not None and record.init_pid is not None and record.init_start is not None
    pids = procs.tree(record.init_pid, record.init_start)
    assert len(pids) >= 5
    sway_uids = set()
    for pid in pids:
        uids = _uids(pid)
        assert 0 not in uids, pid
        if Path(f"/proc/{pid}/comm").read_text().strip() == "sway":
            sway_uids.update(uids)
    # On the host, sway's uid is the box's own range's, 1000 past the box's root.
    assert sway_uids == {record.host_uid + 1000} and range_of(record.host_uid + 1000) is not None
