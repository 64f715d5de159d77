"""Memory and CPU limits of a local box, applied with cgroups (v1 `memory` and `cpu`
controllers), so that `placement.memory` and `placement.cpus` are real limits, not hints.

Each box gets its own group under holmd's own group of each controller (so a box stays
inside whatever limits holmd itself runs under); its processes join it before `bwrap`
starts. Where the controllers are not writable (a cgroup-v2-only host without delegation,
a container without cgroup access) the runtime says so in `can()` and refuses the limits.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import time
from pathlib import Path

from holm.errors import BadRequest

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP_PARENT = "holm-boxes"
CFS_PERIOD_US = 100_000
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


def own_group(controller: str) -> str | None:
    """This process's group in a v1 controller's hierarchy, as in /proc/self/cgroup."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if controller in controllers.split(","):
                return path
    return None


class Cgroups:
    """The `memory` and `cpu` v1 controllers, when this process may make groups in them."""

    def __init__(self, root: Path = CGROUP_ROOT) -> None:
        self.parents: dict[str, Path] = {}
        for controller in ("memory", "cpu"):
            parent = self._usable_parent(root, controller)
            if parent is not None:
                self.parents[controller] = parent

    @staticmethod
    def _usable_parent(root: Path, controller: str) -> Path | None:
        mount = root / controller
        group = own_group(controller)
        if group is None or not (mount / "cgroup.procs").exists():
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

    @property
    def memory(self) -> bool:
        return "memory" in self.parents

    @property
    def cpu(self) -> bool:
        return "cpu" in self.parents

    def make(self, box_id: str, memory: int | None, cpus: float | None) -> list[str]:
        """The box's groups with their limits set; the paths of their `cgroup.procs`."""
        procs = []
        if memory is not None:
            group = _make_group(self.parents["memory"] / box_id)
            (group / "memory.limit_in_bytes").write_text(str(memory))
            procs.append(str(group / "cgroup.procs"))
        if cpus is not None:
            group = _make_group(self.parents["cpu"] / box_id)
            (group / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(round(cpus * CFS_PERIOD_US)))
            procs.append(str(group / "cgroup.procs"))
        return procs


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
