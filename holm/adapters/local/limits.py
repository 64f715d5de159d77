"""Memory, CPU and process-count limits of a local box, applied with cgroups, so that
`placement.memory` and `placement.cpus` are real limits, not hints, and a fork bomb in a
box stops at the box's `pids.max` rather than at the host's.

Each controller is taken where this machine has it:

- cgroup v1 (`/sys/fs/cgroup/<controller>`): each box gets its own group under holmd's own
  group of each controller, so a box stays inside whatever limits holmd itself runs under.
- cgroup v2 (`/sys/fs/cgroup` on a v2-only host, `/sys/fs/cgroup/unified` on a hybrid one,
  for the controllers no v1 hierarchy holds): a `holm-boxes` group whose
  `cgroup.subtree_control` enables the controllers, with a group per box under it. v2 lets
  no group both hold processes and hand controllers to its children ("no internal
  processes"), so `holm-boxes` goes under holmd's own group only when that group holds no
  process (a delegated subtree, as systemd's `Delegate=yes` gives), else under the root
  of the hierarchy (which the rule spares).

A box's processes join its groups before `bwrap` starts. Where no hierarchy gives a
controller (a container without cgroup access, a v2 host without delegation), the runtime
says so in `can()` and refuses the limits that need it; the pids limit is then not applied.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

from holm.errors import BadRequest

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP_PARENT = "holm-boxes"
CONTROLLERS = ("memory", "cpu", "pids")
CFS_PERIOD_US = 100_000
# Tasks (threads count) a box may have at once. Chromium is the greedy one, a few hundred
# threads a screen; a fork bomb stops here instead of at the host's limit.
DEFAULT_PIDS_MAX = 4096
_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
# A limit below this cannot run a desktop; refusing it says more than an OOM kill would.
MIN_MEMORY = 64 << 20


def parse_memory(text: str) -> int:
    """Bytes from "2g", "512m", "1.5GiB", "1073741824"."""
    match = _MEMORY.match(text)
    if match is None:
        raise ValueError(f"placement.memory {text!r} is not a size such as 512m or 2g")
    size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if size < MIN_MEMORY:
        raise ValueError(f"placement.memory {text!r} is under the minimum of 64m")
    return size


def parse_cpus(text: str) -> float:
    try:
        cpus = float(text)
    except ValueError:
        raise ValueError(f"placement.cpus {text!r} is not a number such as 1 or 0.5") from None
    if not 0.01 <= cpus <= 1024:
        raise ValueError(f"placement.cpus {text!r} must be 0.01 to 1024")
    return cpus


def check_limits(memory: str | None, cpus: str | None) -> None:
    """Refuse a placement's limits that do not parse, with `BadRequest` naming them."""
    try:
        if memory is not None:
            parse_memory(memory)
        if cpus is not None:
            parse_cpus(cpus)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


def own_groups(self_cgroup: str) -> tuple[dict[str, str], str | None]:
    """This process's group in each v1 controller's hierarchy, and in the v2 one, from
    the text of /proc/self/cgroup."""
    v1: dict[str, str] = {}
    v2: str | None = None
    for line in self_cgroup.splitlines():
        if not line.strip():
            continue
        hierarchy, controllers, path = line.split(":", 2)
        if hierarchy == "0" and controllers == "":
            v2 = path
        for controller in controllers.split(","):
            if controller:
                v1[controller] = path
    return v1, v2


def unified_mount(root: Path) -> Path | None:
    """Where the v2 hierarchy is mounted: the root itself on a v2-only host, `unified/`
    beside the v1 controllers on a hybrid one."""
    for mount in (root, root / "unified"):
        if (mount / "cgroup.controllers").is_file():
            return mount
    return None


class Cgroups:
    """The controllers this process may make box groups in, each from the hierarchy that
    holds it (v1 or v2)."""

    def __init__(self, root: Path = CGROUP_ROOT, self_cgroup: str | None = None) -> None:
        if self_cgroup is None:
            self_cgroup = Path("/proc/self/cgroup").read_text()
        v1_groups, v2_group = own_groups(self_cgroup)
        # controller -> the v1 group the boxes' groups go under
        self.v1: dict[str, Path] = {}
        for controller in CONTROLLERS:
            group = v1_groups.get(controller)
            if group is not None:
                parent = _usable_v1_parent(root / controller, group)
                if parent is not None:
                    self.v1[controller] = parent
        # A controller that a v1 hierarchy holds is not in the v2 one, usable or not.
        self.v2: Path | None = None
        self.v2_controllers: list[str] = []
        rest = [c for c in CONTROLLERS if c not in v1_groups]
        mount = unified_mount(root)
        if rest and mount is not None and v2_group is not None:
            found = _usable_v2_parent(mount, v2_group, rest)
            if found is not None:
                self.v2, self.v2_controllers = found

    @property
    def parents(self) -> dict[str, Path]:
        """Each usable controller with the group its boxes' groups go under."""
        found = dict(self.v1)
        if self.v2 is not None:
            found.update((c, self.v2) for c in self.v2_controllers)
        return found

    def has(self, controller: str) -> bool:
        return controller in self.v1 or controller in self.v2_controllers

    @property
    def memory(self) -> bool:
        return self.has("memory")

    @property
    def cpu(self) -> bool:
        return self.has("cpu")

    @property
    def pids(self) -> bool:
        return self.has("pids")

    def make(
        self, box_id: str, memory: int | None, cpus: float | None, pids: int | None = None
    ) -> list[str]:
        """The box's groups with their limits set; the paths of their `cgroup.procs`. A
        limit whose controller this machine does not give is left out (the runtime
        refuses memory and cpu limits it cannot apply before this)."""
        procs: list[str] = []
        if memory is not None and "memory" in self.v1:
            group = _make_group(self.v1["memory"] / box_id)
            (group / "memory.limit_in_bytes").write_text(str(memory))
            procs.append(str(group / "cgroup.procs"))
        if cpus is not None and "cpu" in self.v1:
            group = _make_group(self.v1["cpu"] / box_id)
            (group / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(round(cpus * CFS_PERIOD_US)))
            procs.append(str(group / "cgroup.procs"))
        if pids is not None and "pids" in self.v1:
            group = _make_group(self.v1["pids"] / box_id)
            (group / "pids.max").write_text(str(pids))
            procs.append(str(group / "cgroup.procs"))
        v2_files: dict[str, str] = {}
        if memory is not None and "memory" in self.v2_controllers:
            v2_files["memory.max"] = str(memory)
        if cpus is not None and "cpu" in self.v2_controllers:
            v2_files["cpu.max"] = f"{round(cpus * CFS_PERIOD_US)} {CFS_PERIOD_US}"
        if pids is not None and "pids" in self.v2_controllers:
            v2_files["pids.max"] = str(pids)
        if v2_files and self.v2 is not None:
            _make_v2_parent(self.v2, self.v2_controllers)
            group = _make_group(self.v2 / box_id)
            for name, value in v2_files.items():
                (group / name).write_text(value)
            procs.append(str(group / "cgroup.procs"))
        return procs


def _usable_v1_parent(mount: Path, group: str) -> Path | None:
    if not (mount / "cgroup.procs").exists():
        return None
    parent = mount / group.lstrip("/") / GROUP_PARENT
    # Try making the parent, and leave nothing behind: a group with a child cannot be
    # removed, and holmd's own group is not ours to keep alive.
    try:
        parent.mkdir()
    except FileExistsError:
        return parent
    except OSError:
        return None
    _remove_if_empty(parent)
    return parent


def _usable_v2_parent(mount: Path, own: str, wanted: list[str]) -> tuple[Path, list[str]] | None:
    """Where the boxes' v2 groups go and which of `wanted` they get: under holmd's own
    group when it holds no process (so it may hand controllers down), else under the
    root of the hierarchy."""
    own_dir = mount / own.lstrip("/")
    bases = []
    if own_dir != mount and not _words(own_dir / "cgroup.procs"):
        bases.append(own_dir)
    bases.append(mount)
    for base in bases:
        available = _words(base / "cgroup.controllers")
        controllers = [c for c in wanted if c in available]
        if not controllers:
            continue
        parent = base / GROUP_PARENT
        try:
            _enable(base, controllers)
            _make_v2_parent(parent, controllers)
        except OSError:
            continue
        _remove_if_empty(parent)
        return parent, controllers
    return None


def _make_v2_parent(parent: Path, controllers: Iterable[str]) -> None:
    """`holm-boxes` with the controllers enabled for its children (the boxes)."""
    parent.mkdir(exist_ok=True)
    _enable(parent, controllers)


def _enable(group: Path, controllers: Iterable[str]) -> None:
    have = _words(group / "cgroup.subtree_control")
    missing = [c for c in controllers if c not in have]
    if missing:
        (group / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in missing))


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except FileNotFoundError:
        return []


def remove_groups(procs_files: list[str], timeout_s: float = 5.0) -> None:
    """Remove a box's groups, and their parent once no box has a group in it; a group
    empties a moment after its last process ended."""
    for procs in procs_files:
        group = os.path.dirname(procs)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                os.rmdir(group)
                break
            except FileNotFoundError:
                break
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)
        _remove_if_empty(Path(group).parent)


def _make_group(group: Path) -> Path:
    try:
        group.mkdir(parents=True, exist_ok=True)
    except FileNotFoundError:
        # The last box's removal took the parent away between its mkdir and ours.
        group.mkdir(parents=True, exist_ok=True)
    return group


def _remove_if_empty(group: Path) -> None:
    """rmdir a group that has no child group and no process (it fails otherwise)."""
    with contextlib.suppress(OSError):
        group.rmdir()


def joining_argv(procs_files: list[str], argv: list[str]) -> list[str]:
    """`argv` started by a shell that first moves itself into the groups, so that every
    process of the box is in them from its first instruction."""
    if not procs_files:
        return argv
    script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
    return ["/bin/sh", "-c", script, "holm-join", *procs_files, "--", *argv]
