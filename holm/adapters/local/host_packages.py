"""The host's Debian packages, as a local box sees them: its /usr is the host's, so a
feature or an app is there exactly when the host has installed its packages.

dpkg is asked once for the packages of a whole spec, and what it said is kept until its
database changes: every install and removal writes dpkg's status file anew (and, while it
runs, journals into the `updates` folder beside it), so a new stamp of those (inode, size,
time) is a new answer. Asked anew at each create, once a feature, dpkg-query took about
75 ms of a create of the default spec (its four features, ~18 ms a call from holmd's
process); a create now asks nothing of dpkg until the host's packages change, and the
local runtime asks it on a thread, never on the event loop.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterable, Mapping

from holm.errors import Unsupported

INSTALLED = "ii"
# Rewritten (a new file renamed over it) by every install and removal.
DPKG_STATUS = "/var/lib/dpkg/status"

Stamp = tuple[int, ...] | None


def _stamp(status_path: str) -> Stamp:
    """The status file's and its `updates` folder's identity, size and time (None when
    there is no status file: dpkg is then asked every time)."""
    try:
        status = os.stat(status_path)
    except OSError:
        return None
    try:
        updates = os.stat(os.path.join(os.path.dirname(status_path), "updates")).st_mtime_ns
    except OSError:
        updates = 0
    return status.st_ino, status.st_size, status.st_mtime_ns, updates


def _installed_of(packages: list[str]) -> set[str]:
    """Those of `packages` that dpkg has installed, in one call: dpkg-query names each
    package it knows, and fails for the others."""
    found = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package} ${db:Status-Abbrev}\\n", *packages],
        capture_output=True,
        text=True,
        check=False,
    )
    installed = set()
    for line in found.stdout.splitlines():
        name, _, status = line.partition(" ")
        if status.strip() == INSTALLED:
            installed.add(name.split(":")[0])
    return installed


class HostPackages:
    """Whether the host has each package asked about, as dpkg said since its last change."""

    def __init__(self, status_path: str = DPKG_STATUS) -> None:
        self.status_path = status_path
        # Creates ask from threads of their own: one asks dpkg at a time, the others wait
        # for its answer rather than ask again.
        self._lock = threading.Lock()
        self._stamp: Stamp = None
        self._known: dict[str, bool] = {}
        self.asked = 0

    def missing(self, packages: Iterable[str]) -> list[str]:
        """Those of `packages` that dpkg does not have installed on this machine, sorted."""
        wanted = sorted(set(packages))
        if not wanted:
            return []
        with self._lock:
            # Read before dpkg is asked: a change meanwhile gives the next call a new stamp.
            stamp = _stamp(self.status_path)
            if stamp is None or stamp != self._stamp:
                self._stamp, self._known = stamp, {}
            unknown = [pkg for pkg in wanted if pkg not in self._known]
            if unknown:
                self.asked += 1
                installed = _installed_of(unknown)
                self._known.update((pkg, pkg in installed) for pkg in unknown)
            return [pkg for pkg in wanted if not self._known[pkg]]


HOST = HostPackages()


def refuse_missing(what: Mapping[str, Iterable[str]]) -> None:
    """Refuse, as `unsupported`, what needs packages the host lacks: `what` maps a name
    ("feature audio", "app gimp") to its packages."""
    needs = {name: sorted(set(packages)) for name, packages in what.items()}
    absent = set(HOST.missing(pkg for packages in needs.values() for pkg in packages))
    lacking = {name: [pkg for pkg in pkgs if pkg in absent] for name, pkgs in needs.items()}
    lacking = {name: packages for name, packages in lacking.items() if packages}
    if not lacking:
        return
    every = sorted(absent)
    needs_told = "; ".join(f"{name} needs {', '.join(pkgs)}" for name, pkgs in lacking.items())
    raise Unsupported(
        f"a local box runs this machine's programs, and this machine lacks some: {needs_told}. "
        f"Install them on the host with `apt-get install {' '.join(every)}` "
        "(scripts/setup installs every feature's), or use the docker runtime"
    )
