"""Where a box's limits are written, on each kind of cgroup host. This machine has one kind
(tests/local/test_local_runtime.py and tests/security check the limits for real on it);
the others are fake trees in a tmp folder, the files the kernel would show, to check what
holm writes there."""

from __future__ import annotations

from pathlib import Path

import pytest

from holm.adapters.local.limits import Cgroups, own_groups, unified_mount
from holm.adapters.local.runtime import LocalRuntime
from holm.errors import Unsupported
from holm.wire.spec import Placement, Spec

MIB = 1 << 20


def group(path: Path, **files: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name.replace("_", ".", 1)).write_text(text)
    return path


def v2_root(tmp_path: Path, enabled: str = "cpu memory pids") -> Path:
    return group(
        tmp_path / "cgroup",
        cgroup_controllers="cpuset cpu io memory hugetlb pids",
        cgroup_subtree_control=enabled,
        cgroup_procs="1\n",
    )


def test_proc_self_cgroup_is_read_for_both_hierarchies() -> None:
    v1, v2 = own_groups("8:pids:/\n4:memory:/a/b\n1:cpu,cpuacct:/\n0::/user.slice\n")
    assert v1 == {"pids": "/", "memory": "/a/b", "cpu": "/", "cpuacct": "/"}
    assert v2 == "/user.slice"
    assert own_groups("0::/\n") == ({}, "/")


def test_v2_boxes_go_under_holmds_own_group_when_it_is_delegated(tmp_path: Path) -> None:
    root = v2_root(tmp_path)
    own = group(
        root / "system.slice" / "holmd.service",
        cgroup_controllers="cpu memory pids",
        cgroup_subtree_control="",
        cgroup_procs="",
    )
    cgroups = Cgroups(root, "0::/system.slice/holmd.service\n")
    assert unified_mount(root) == root
    assert cgroups.v2 == own / "holm-boxes" and cgroups.v1 == {}
    assert cgroups.memory and cgroups.cpu and cgroups.pids

    procs = cgroups.make("box_1", 256 * MIB, 0.5, 300)
    box = own / "holm-boxes" / "box_1"
    assert procs == [str(box / "cgroup.procs")]
    assert (box / "memory.max").read_text() == str(256 * MIB)
    assert (box / "cpu.max").read_text() == "50000 100000"
    assert (box / "pids.max").read_text() == "300"
    # Each level hands the controllers down to the next.
    for level in (own, own / "holm-boxes"):
        assert (level / "cgroup.subtree_control").read_text().split() == [
            "+memory",
            "+cpu",
            "+pids",
        ]


def test_v2_boxes_go_under_the_root_when_holmds_group_holds_processes(tmp_path: Path) -> None:
    # "No internal processes": a group with processes cannot give its children controllers.
    root = v2_root(tmp_path)
    group(root / "user.slice", cgroup_controllers="cpu memory pids", cgroup_procs="4242\n")
    cgroups = Cgroups(root, "0::/user.slice\n")
    assert cgroups.v2 == root / "holm-boxes"
    assert cgroups.make("box_2", None, None, 100) == [
        str(root / "holm-boxes" / "box_2" / "cgroup.procs")
    ]
    assert (root / "holm-boxes" / "box_2" / "pids.max").read_text() == "100"
    assert not (root / "holm-boxes" / "box_2" / "memory.max").exists()
    # The root had the controllers on already: holm wrote nothing there.
    assert (root / "cgroup.subtree_control").read_text() == "cpu memory pids"


def test_v2_only_enables_what_the_root_does_not_have_on_yet(tmp_path: Path) -> None:
    root = v2_root(tmp_path, enabled="memory")
    cgroups = Cgroups(root, "0::/\n")
    assert cgroups.v2 == root / "holm-boxes"
    assert (root / "cgroup.subtree_control").read_text() == "+cpu +pids"


def test_a_hybrid_host_takes_each_controller_from_v1_and_the_rest_from_v2(
    tmp_path: Path,
) -> None:
    root = tmp_path / "cgroup"
    for controller in ("memory", "cpu"):
        group(root / controller, cgroup_procs="1\n")
    group(root / "unified", cgroup_controllers="pids", cgroup_subtree_control="", cgroup_procs="")
    cgroups = Cgroups(root, "4:memory:/\n1:cpu:/\n0::/\n")
    assert set(cgroups.v1) == {"memory", "cpu"} and cgroups.v2_controllers == ["pids"]
    procs = cgroups.make("box_3", 512 * MIB, 1.5, 200)
    assert procs == [
        str(root / "memory" / "holm-boxes" / "box_3" / "cgroup.procs"),
        str(root / "cpu" / "holm-boxes" / "box_3" / "cgroup.procs"),
        str(root / "unified" / "holm-boxes" / "box_3" / "cgroup.procs"),
    ]
    assert (root / "memory/holm-boxes/box_3/memory.limit_in_bytes").read_text() == str(512 * MIB)
    assert (root / "cpu/holm-boxes/box_3/cpu.cfs_quota_us").read_text() == "150000"
    assert (root / "cpu/holm-boxes/box_3/cpu.cfs_period_us").read_text() == "100000"
    assert (root / "unified/holm-boxes/box_3/pids.max").read_text() == "200"


def test_a_v1_controller_is_not_looked_for_in_v2(tmp_path: Path) -> None:
    # Bound to v1, a controller is absent from v2 even when its v1 group is not writable.
    root = tmp_path / "cgroup"
    group(root / "unified", cgroup_controllers="memory", cgroup_subtree_control="")
    cgroups = Cgroups(root, "4:memory:/\n0::/\n")
    assert not cgroups.memory and cgroups.v2 is None


async def test_limits_no_hierarchy_gives_are_refused(tmp_path: Path) -> None:
    root = v2_root(tmp_path, enabled="")
    # A subtree_control that cannot be written (here: not a file).
    (root / "cgroup.subtree_control").unlink()
    (root / "cgroup.subtree_control").mkdir()
    cgroups = Cgroups(root, "0::/\n")
    assert not (cgroups.memory or cgroups.cpu or cgroups.pids)
    runtime = LocalRuntime(tmp_path / "boxes", "test", cgroups=cgroups)
    assert not runtime.can().memory_limit and not runtime.can().cpu_limit
    with pytest.raises(Unsupported, match="memory"):
        await runtime.create("box_4", Spec(), Placement(memory="256m"))
    with pytest.raises(Unsupported, match="cpu"):
        await runtime.create("box_4", Spec(), Placement(cpus="1"))
    assert await runtime.list() == []
