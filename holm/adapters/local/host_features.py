"""The features a local box can have: it runs the host's own programs (it sees the host's
`/usr`), so a feature is there only when the host has its Debian packages.

A feature whose packages the host lacks is refused, naming them, rather than ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from holm.adapters.docker.dockerfile import FEATURE_PACKAGES
from holm.errors import Unsupported
from holm.wire.spec import Feature

# A file of each package that the box uses, so its being there says the package is.
# (A package not named here is not checked.)
EVIDENCE: dict[str, str] = {
    "at-spi2-core": "/usr/libexec/at-spi-bus-launcher",
    "dbus-daemon": "/usr/bin/dbus-daemon",
    "python3-pyatspi": "/usr/lib/python3/dist-packages/pyatspi/__init__.py",
}


def missing_packages(feature: Feature, root: Path = Path("/")) -> list[str]:
    return [
        package
        for package in FEATURE_PACKAGES[feature]
        if package in EVIDENCE and not (root / EVIDENCE[package].lstrip("/")).exists()
    ]


def refuse_missing(features: Iterable[Feature], root: Path = Path("/")) -> None:
    for feature in features:
        missing = missing_packages(feature, root)
        if missing:
            raise Unsupported(
                f"the local runtime gives the `{feature}` feature only when this host has "
                f"{', '.join(missing)}: apt-get install {' '.join(missing)} (scripts/setup "
                "installs them), or use the docker runtime"
            )


__all__ = ["EVIDENCE", "missing_packages", "refuse_missing"]
