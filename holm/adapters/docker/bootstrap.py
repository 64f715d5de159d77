"""The base image when no registry gives it: `debootstrap --variant=minbase` of the Debian
suite the base names, imported into the engine with `docker import` (through the SDK).

Where a registry answers, the base is pulled as usual. Where none does (this machine reaches
Debian's mirror only), the bootstrapped stand-in is tagged `holm-base:<suite>` and kept:
one bootstrap (about 40 s) serves every later build. It is made to look like the `-slim`
images: later installs leave documentation, man pages and locales out, and apt keeps no
lists or archives.

Runs in a thread (subprocess, tar, docker SDK), never on the event loop.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import docker.errors

from holm.errors import Unavailable

Log = Callable[[str], None]

STAND_IN_REPOSITORY = "holm-base"
DEFAULT_MIRROR = "http://deb.debian.org/debian"

# What the official -slim images tell dpkg to leave out (their /etc/dpkg/dpkg.cfg.d/docker).
_SLIM_DPKG_EXCLUDES = """\
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
"""

_APT_NO_CACHE = """\
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
"""

_IMPORT_CHANGES = [
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    'CMD ["bash"]',
]


def debian_suite(base_image: str) -> str | None:
    """The Debian suite a base names (`debian:bookworm-slim` → `bookworm`), or None when
    it is not a Debian image debootstrap could make."""
    match = re.fullmatch(r"(?:docker\.io/)?(?:library/)?debian:([a-z]+)(?:-slim)?", base_image)
    return match.group(1) if match else None


def stand_in_ref(suite: str) -> str:
    return f"{STAND_IN_REPOSITORY}:{suite}"


def host_mirror(sources: Path = Path("/etc/apt")) -> str:
    """The Debian mirror the host's apt uses (it is the one that answers here)."""
    files = [sources / "sources.list", *sorted((sources / "sources.list.d").glob("*"))]
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            line = line.split("#", 1)[0]
            for url in re.findall(r"(https?://\S+/debian)/?(?:\s|$)", line):
                return str(url)
    return DEFAULT_MIRROR


def ensure_base_image(
    client: docker.DockerClient, base_image: str, log: Log, mirror: str | None = None
) -> str:
    """The reference to build `FROM`: the base itself when the engine has it or a registry
    gives it, else the bootstrapped stand-in (made once, then found in the engine)."""
    if _has_image(client, base_image):
        return base_image
    suite = debian_suite(base_image)
    if suite is not None and _has_image(client, stand_in_ref(suite)):
        return stand_in_ref(suite)
    log(f"base image {base_image} is not in the engine; pulling it")
    try:
        client.images.pull(base_image)
        return base_image
    except docker.errors.APIError as exc:
        log(f"pull failed ({_first_line(exc)})")
    if suite is None:
        raise Unavailable(
            f"base image {base_image} is missing and no registry gives it; only a "
            "debian:<suite> base can be bootstrapped with debootstrap"
        )
    return bootstrap_base_image(client, suite, mirror or host_mirror(), log)


def bootstrap_base_image(
    client: docker.DockerClient,
    suite: str,
    mirror: str,
    log: Log,
    repository: str = STAND_IN_REPOSITORY,
) -> str:
    """Make `<repository>:<suite>` from Debian's mirror; return its reference."""
    ref = f"{repository}:{suite}"
    log(f"no registry answers: bootstrapping {ref} with debootstrap from {mirror}")
    with tempfile.TemporaryDirectory(prefix="holm-debootstrap-") as tmp:
        root = Path(tmp) / "root"
        _run(
            ["debootstrap", "--variant=minbase", suite, str(root), mirror],
            log,
            what="debootstrap",
        )
        _make_slim(root, suite, mirror)
        tarball = Path(tmp) / "root.tar"
        _run(
            ["tar", "--numeric-owner", "--xattrs", "-C", str(root), "-cf", str(tarball), "."],
            log,
            what="tar",
        )
        log(f"importing {tarball.stat().st_size // (1 << 20)} MiB as {ref}")
        result: Any = client.api.import_image(
            src=str(tarball), repository=repository, tag=suite, changes=_IMPORT_CHANGES
        )
    log(f"imported {ref}: {str(result).strip()[:200]}")
    return ref


def _make_slim(root: Path, suite: str, mirror: str) -> None:
    (root / "etc/dpkg/dpkg.cfg.d/docker").write_text(_SLIM_DPKG_EXCLUDES)
    (root / "etc/apt/apt.conf.d/docker-clean").write_text(_APT_NO_CACHE)
    security = mirror + "-security" if mirror.endswith("/debian") else mirror
    (root / "etc/apt/sources.list").write_text(
        f"deb {mirror} {suite} main\n"
        f"deb {mirror} {suite}-updates main\n"
        f"deb {security} {suite}-security main\n"
    )
    for folder in ("var/lib/apt/lists", "var/cache/apt/archives"):
        for path in (root / folder).glob("*"):
            if path.is_file():
                path.unlink()


def _run(argv: list[str], log: Log, *, what: str) -> None:
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    ) as proc:
        assert proc.stdout is not None
        tail: list[str] = []
        for line in proc.stdout:
            line = line.rstrip()
            log(line)
            tail = [*tail[-9:], line]
        code = proc.wait()
    if code != 0:
        raise Unavailable(f"{what} failed with code {code}: " + " | ".join(tail[-3:]))


def _has_image(client: docker.DockerClient, ref: str) -> bool:
    try:
        client.images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    return True


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__


__all__ = ["bootstrap_base_image", "debian_suite", "ensure_base_image", "host_mirror"]
