"""The base image where no registry answers: debootstrap from Debian's mirror, imported
through the SDK. The real thing, into its own tag (the runtime's stand-in is left alone)."""

from __future__ import annotations

import docker
import pytest

from holm.adapters.docker.bootstrap import bootstrap_base_image, ensure_base_image, host_mirror
from holm.errors import Unavailable

pytestmark = pytest.mark.docker

TEST_REPOSITORY = "holm-base-test"


def test_debootstrap_makes_a_slim_debian_base(engine: docker.DockerClient) -> None:
    lines: list[str] = []
    ref = bootstrap_base_image(engine, "bookworm", host_mirror(), lines.append, TEST_REPOSITORY)
    try:
        assert ref == f"{TEST_REPOSITORY}:bookworm"
        assert any("debootstrap" in line for line in lines)
        out = engine.containers.run(
            ref,
            ["sh", "-c", "cat /etc/debian_version; cat /etc/dpkg/dpkg.cfg.d/docker; echo $PATH"],
            remove=True,
        ).decode()
        assert out.startswith("12.")
        assert "path-exclude /usr/share/doc/*" in out
        assert "/usr/bin" in out
    finally:
        engine.images.remove(ref, force=True)


def test_a_missing_base_that_cannot_be_bootstrapped_is_unavailable(
    engine: docker.DockerClient,
) -> None:
    lines: list[str] = []
    with pytest.raises(Unavailable, match="only a debian:<suite> base"):
        ensure_base_image(engine, "holm-no-such/base:1", lines.append)
    assert any("pull" in line for line in lines)
    with pytest.raises(Unavailable, match="debootstrap failed"):
        ensure_base_image(engine, "debian:holmnosuchsuite-slim", lines.append)
