"""Which bases can be bootstrapped, and from which mirror."""

from __future__ import annotations

from pathlib import Path

from holm.adapters.docker.bootstrap import debian_suite, host_mirror


def test_debian_bases_name_their_suite() -> None:
    assert debian_suite("debian:bookworm-slim") == "bookworm"
    assert debian_suite("debian:bookworm") == "bookworm"
    assert debian_suite("docker.io/library/debian:trixie-slim") == "trixie"
    assert debian_suite("ubuntu:24.04") is None
    assert debian_suite("debian:12") is None


def test_the_mirror_is_the_one_apt_uses(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\n"
        "URIs: http://mirror.example/debian\nSuites: bookworm\n"
    )
    (tmp_path / "sources.list.d" / "other.list").write_text(
        "deb https://packages.example.com/apt stable main\n"
    )
    assert host_mirror(tmp_path) == "http://mirror.example/debian"


def test_without_sources_the_mirror_is_debians(tmp_path: Path) -> None:
    assert host_mirror(tmp_path) == "http://deb.debian.org/debian"
