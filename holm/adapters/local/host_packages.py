"""The host's Debian packages, as a local box sees them: its /usr is the host's, so a
feature or an app is there exactly when the host has installed its packages."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping

from holm.errors import Unsupported

INSTALLED = "ii"


def missing_packages(packages: Iterable[str]) -> list[str]:
    """Those of `packages` that dpkg does not have installed on this machine."""
    wanted = sorted(set(packages))
    if not wanted:
        return []
    # One call for all: dpkg-query names each package it knows, and fails for the others.
    found = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package} ${db:Status-Abbrev}\\n", *wanted],
        capture_output=True,
        text=True,
        check=False,
    )
    installed = set()
    for line in found.stdout.splitlines():
        name, _, status = line.partition(" ")
        if status.strip() == INSTALLED:
            installed.add(name.split(":")[0])
    return [pkg for pkg in wanted if pkg not in installed]


def refuse_missing(what: Mapping[str, Iterable[str]]) -> None:
    """Refuse, as `unsupported`, what needs packages the host lacks: `what` maps a name
    ("feature audio", "app gimp") to its packages."""
    lacking = {name: missing_packages(packages) for name, packages in what.items()}
    lacking = {name: packages for name, packages in lacking.items() if packages}
    if not lacking:
        return
    every = sorted({pkg for packages in lacking.values() for pkg in packages})
    needs = "; ".join(f"{name} needs {', '.join(pkgs)}" for name, pkgs in lacking.items())
    raise Unsupported(
        f"a local box runs this machine's programs, and this machine lacks some: {needs}. "
        f"Install them on the host with `apt-get install {' '.join(every)}` "
        "(scripts/setup installs every feature's), or use the docker runtime"
    )
