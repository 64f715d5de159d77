"""Images of docker boxes: their key (the tag), their build, and the images API the server
serves (`POST /v1/runtimes/{name}/image`, `GET …/images`, `GET …/images/{digest}`,
`DELETE …/images/{digest}`, `GET /v1/images`).

An image is named `holm-box:<key>`. The key is a hash of the image source (the Dockerfile
template, the configured base, the agent's code and the Python libraries copied for it),
the features' and spec's added packages, and the CPU architecture. So a change to any of
them makes a new image, and a box never runs an old one by mistake; the canonical spec
makes the default features and the same features listed by name one key. Everything
else in a spec (screens, size, policy) is given to the container, not baked in.

Builds go through the docker SDK in a thread; a build of a tag the engine has is a cache
hit that touches nothing else. Two builds of one key at once share one build.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import io
import re
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import docker
import docker.errors
import msgspec
import requests.exceptions

from holm.adapters.base import Progress
from holm.adapters.docker import dockerfile
from holm.adapters.docker.bootstrap import ensure_base_image
from holm.adapters.docker.engine_tls import ssl_error_in, tls_refusal
from holm.errors import BadRequest, Denied, Failed, HolmError, NotFound, Unavailable
from holm.wire.api import BuildState, ImageInfo
from holm.wire.spec import (
    Feature,
    Spec,
    app_packages,
    canonical_json,
    canonical_spec,
    spec_digest,
)

REPOSITORY = "holm-box"
DEFAULT_BASE_IMAGE = "debian:bookworm-slim"

LABEL_KEY = "holm.image"
LABEL_FEATURES = "holm.image.features"
LABEL_PACKAGES = "holm.image.packages"
LABEL_ARCH = "holm.image.arch"
LABEL_SPEC_DIGEST = "holm.image.spec_digest"
LABEL_BASE = "holm.image.base"

# The agent's code inside the image: what `python3 -m holm.agent` imports, and
# nothing of the server, so a change to the server does not make a new image.
# Only what the agent imports (tests/agent/test_lifecycle.py holds the list to its imports):
# a change to a REST body or a trace entry builds no new image.
AGENT_PATHS = (
    "__init__.py",
    "errors.py",
    "wire/__init__.py",
    "wire/actions.py",
    "wire/catalog.py",
    "wire/keys.py",
    "wire/results.py",
    "wire/runtime.py",
    "wire/spec.py",
    "wire/values.py",
    "wire/agent_protocol.py",
    "agent",
)
# The agent's libraries; their own dependencies come along.
AGENT_LIBRARIES = ("msgspec", "pillow", "python-xlib")
# What a Wayland image's agent adds (holm/agent/wayland/): pywayland, with the bindings of
# the wlroots protocols that scripts/build-wayland-protocols generates into its package
# folder (files of no wheel's record, so they are named here).
WAYLAND_LIBRARIES = ("pywayland",)
GENERATED_PROTOCOLS = (
    "pywayland/protocol/virtual_keyboard_unstable_v1",
    "pywayland/protocol/wlr_virtual_pointer_unstable_v1",
    "pywayland/protocol/wlr_screencopy_unstable_v1",
    "pywayland/protocol/wlr_data_control_unstable_v1",
)

_PACKAGE_NAME = re.compile(r"[a-z0-9][a-z0-9+.:-]*", re.IGNORECASE)

# The `holm` package folder this module is in: holm/adapters/docker/images.py.
_HOLM_ROOT = Path(__file__).resolve().parents[2]


class ImageSource(msgspec.Struct, frozen=True, kw_only=True):
    """Everything an image is made of besides the spec's packages and the architecture."""

    template: str
    base_image: str
    python_version: str
    # (path under holm/, sha256 of its bytes), in path order.
    agent_files: tuple[tuple[str, str], ...]
    # "name==version" of each library copied, in order.
    python_libraries: tuple[str, ...]
    # The same for what a Wayland image adds, and the generated protocols' (path, sha256).
    wayland_libraries: tuple[str, ...] = ()
    wayland_protocols: tuple[tuple[str, str], ...] = ()


def image_source(base_image: str = DEFAULT_BASE_IMAGE) -> ImageSource:
    """The image source of this holm: its template, its agent's code as it is on disk, and
    the versions of the libraries in the environment holm runs in."""
    return ImageSource(
        template=dockerfile.TEMPLATE,
        base_image=base_image,
        python_version=f"{sys.version_info.major}.{sys.version_info.minor}",
        agent_files=tuple(
            (rel, hashlib.sha256(path.read_bytes()).hexdigest()) for rel, path in _agent_files()
        ),
        python_libraries=_versions(_library_closure(AGENT_LIBRARIES)),
        wayland_libraries=_versions(_library_closure(WAYLAND_LIBRARIES, AGENT_LIBRARIES)),
        wayland_protocols=tuple(
            (rel, hashlib.sha256(path.read_bytes()).hexdigest()) for rel, path in _generated_files()
        ),
    )


def _versions(dists: list[importlib.metadata.Distribution]) -> tuple[str, ...]:
    return tuple(f"{dist.metadata['Name']}=={dist.version}" for dist in dists)


def image_key(spec: Spec, source: ImageSource, arch: str) -> str:
    """The key in an image's tag: 32 hex digits of a hash over every input of the image."""
    desktop = canonical_spec(spec).desktop
    if desktop.server != "wayland":
        # What only a Wayland image holds makes no new X11 image.
        source = msgspec.structs.replace(source, wayland_libraries=(), wayland_protocols=())
    inputs = {
        "source": source,
        "dockerfile": spec_dockerfile(spec, source),
        "features": desktop.features,
        "packages": desktop.packages,
        "arch": arch,
    }
    return hashlib.sha256(canonical_json(inputs)).hexdigest()[:32]


def image_ref(key: str) -> str:
    return f"{REPOSITORY}:{key}"


def engine_arch(client: docker.DockerClient) -> str:
    """The engine's CPU architecture in Docker's words (`amd64`, `arm64`)."""
    return str(client.version().get("Arch", "unknown"))


# Brings the image of a key (for that spec) to the engine some other way than a build there,
# blocking; False when it cannot, and the image is then built there.
Supply = Callable[[str, Spec, Progress], bool]


class Images:
    """The images of one docker runtime, built and kept in its engine."""

    def __init__(
        self,
        client: docker.DockerClient,
        *,
        runtime: str,
        arch: str,
        source: ImageSource,
        base_image: str,
        supply: Supply | None = None,
    ) -> None:
        self._client = client
        # Another way to the image than a build here (a remote engine's: from this host's).
        self._supply = supply
        self._runtime = runtime
        self._arch = arch
        self._base_image = base_image
        self.source = source
        self._building: dict[str, asyncio.Task[ImageInfo]] = {}
        self._listeners: dict[str, list[Progress]] = {}
        self._failed: dict[str, ImageInfo] = {}

    def key(self, spec: Spec) -> str:
        return image_key(spec, self.source, self._arch)

    @property
    def arch(self) -> str:
        return self._arch

    @arch.setter
    def arch(self, arch: str) -> None:
        """For a runtime that asks its engine at first use rather than when it is made."""
        self._arch = arch

    @property
    def base_image(self) -> str:
        return self._base_image

    def find_or_build_blocking(self, key: str, spec: Spec, log: Progress) -> None:
        """The image of `key` there, built when the engine lacks it; in a thread, for
        another runtime's `Supply` (nothing here watches this build)."""
        if self._find(key) is None:
            self._build_blocking(key, spec, False, log)

    async def build_image(
        self, spec: Spec, progress: Progress | None = None, *, rebuild: bool = False
    ) -> ImageInfo:
        """The image for a spec, built when the engine does not have it. `progress` gets the
        build's log lines, on the event loop. `rebuild` builds it again without the
        engine's cache even when it exists (to take Debian's updates)."""
        _check_packages(spec)
        key = self.key(spec)
        if not rebuild:
            built = await asyncio.to_thread(self._find, key)
            if built is not None:
                return built
        listeners = self._listeners.setdefault(key, [])
        if progress is not None:
            listeners.append(progress)
        task = self._building.get(key)
        if task is None:
            task = asyncio.create_task(self._build(key, spec, rebuild))
            self._building[key] = task
        try:
            return await asyncio.shield(task)
        finally:
            if progress is not None and progress in listeners:
                listeners.remove(progress)

    async def list_images(self) -> list[ImageInfo]:
        built = await asyncio.to_thread(self._list_built)
        pending = [self._pending(key, "building") for key in self._building]
        return [*built, *pending, *self._failed.values()]

    async def get_image(self, digest: str) -> ImageInfo:
        if digest in self._building:
            return self._pending(digest, "building")
        if digest in self._failed:
            return self._failed[digest]
        found = await asyncio.to_thread(self._find, digest)
        if found is None:
            raise NotFound(f"no image {digest} on runtime {self._runtime}")
        return found

    async def remove_image(self, digest: str) -> None:
        """Remove a built image; refused while it builds or while a box (in any state)
        was made from it."""
        if digest in self._building:
            raise Denied(f"image {digest} is building", retryable=True)
        if self._failed.pop(digest, None) is not None:
            return
        await asyncio.to_thread(self._remove, digest)

    def _remove(self, digest: str) -> None:
        with engine_errors():
            users = self._client.containers.list(
                all=True, filters={"label": f"{LABEL_KEY}={digest}"}
            )
            if users:
                boxes = ", ".join(str(c.labels.get("holm.box", c.name)) for c in users)
                raise Denied(f"image {digest} is used by {boxes}", retryable=True)
            try:
                self._client.images.remove(image_ref(digest))
            except docker.errors.ImageNotFound as exc:
                raise NotFound(f"no image {digest} on runtime {self._runtime}") from exc

    async def _build(self, key: str, spec: Spec, rebuild: bool) -> ImageInfo:
        loop = asyncio.get_running_loop()

        def log(line: str) -> None:
            loop.call_soon_threadsafe(self._tell, key, line)

        try:
            info = await asyncio.to_thread(self._build_blocking, key, spec, rebuild, log)
        except HolmError as exc:
            self._failed[key] = self._pending(key, "failed", exc.message, spec)
            raise
        except Exception as exc:
            self._failed[key] = self._pending(key, "failed", str(exc), spec)
            raise Failed(f"image build failed: {exc}") from exc
        else:
            self._failed.pop(key, None)
            return info
        finally:
            del self._building[key]
            self._listeners.pop(key, None)

    def _tell(self, key: str, line: str) -> None:
        for listener in list(self._listeners.get(key, ())):
            listener(line)

    def _build_blocking(self, key: str, spec: Spec, rebuild: bool, log: Progress) -> ImageInfo:
        ref = image_ref(key)
        if not rebuild and self._supply is not None and self._supply(key, spec, log):
            found = self._find(key)
            if found is not None:
                return found
        with engine_errors():
            base = ensure_base_image(self._client, self._base_image, log)
            desktop = canonical_spec(spec).desktop
            labels = {
                LABEL_KEY: key,
                LABEL_FEATURES: canonical_json(desktop.features).decode(),
                LABEL_PACKAGES: canonical_json(desktop.packages).decode(),
                LABEL_ARCH: self._arch,
                LABEL_SPEC_DIGEST: spec_digest(spec),
                LABEL_BASE: base,
            }
            log(f"building {ref} from {base}")
            started = time.monotonic()
            dockerfile_text = spec_dockerfile(spec, self.source)
            with _build_context(dockerfile_text, spec.desktop.server == "wayland") as context:
                lines = self._client.api.build(
                    fileobj=context,
                    custom_context=True,
                    tag=ref,
                    buildargs={"BASE_IMAGE": base},
                    labels=labels,
                    rm=True,
                    forcerm=True,
                    pull=False,
                    nocache=rebuild,
                    decode=True,
                )
                _follow_build(lines, log)
            log(f"built {ref} in {time.monotonic() - started:.1f} s")
            found = self._find(key)
        if found is None:
            raise Failed(f"the build of {ref} ended without the image")
        return found

    def _find(self, key: str) -> ImageInfo | None:
        with engine_errors():
            try:
                image = self._client.images.get(image_ref(key))
            except docker.errors.ImageNotFound:
                return None
        return self._info(image)

    def _list_built(self) -> list[ImageInfo]:
        with engine_errors():
            images = self._client.images.list(filters={"label": LABEL_KEY})
        return [self._info(image) for image in images if _is_box_image(image)]

    def _info(self, image: Any) -> ImageInfo:
        labels: dict[str, str] = image.labels or {}
        key = labels.get(LABEL_KEY, "")
        return ImageInfo(
            runtime=self._runtime,
            image=image_ref(key),
            digest=key,
            spec_digest=labels.get(LABEL_SPEC_DIGEST),
            features=msgspec.json.decode(labels.get(LABEL_FEATURES, "[]"), type=list[Feature]),
            packages=msgspec.json.decode(labels.get(LABEL_PACKAGES, "[]"), type=list[str]),
            arch=labels.get(LABEL_ARCH, ""),
            size_bytes=image.attrs.get("Size"),
            created_at_ms=_created_ms(image.attrs.get("Created")),
        )

    def _pending(
        self, key: str, state: BuildState, reason: str | None = None, spec: Spec | None = None
    ) -> ImageInfo:
        info = ImageInfo(runtime=self._runtime, image="", digest=key, state=state, reason=reason)
        if spec is not None:
            desktop = canonical_spec(spec).desktop
            info.spec_digest = spec_digest(spec)
            info.features = list(desktop.features or [])
            info.packages = desktop.packages
            info.arch = self._arch
        return info


def spec_dockerfile(spec: Spec, source: ImageSource) -> str:
    """The Dockerfile of a spec's image."""
    canonical = canonical_spec(spec)
    desktop = canonical.desktop
    packages = [*desktop.packages, *app_packages(canonical.apps)]
    return dockerfile.render(
        desktop.features or [], packages, source.python_version, desktop.server
    )


def _check_packages(spec: Spec) -> None:
    # The names go into a shell line of the Dockerfile: only apt's own name characters.
    for pkg in [*spec.desktop.packages, *app_packages(spec.apps)]:
        if not _PACKAGE_NAME.fullmatch(pkg):
            raise BadRequest(f"spec.desktop.packages has an invalid package name {pkg!r}")


def _follow_build(lines: Iterator[dict[str, Any]], log: Progress) -> None:
    tail: list[str] = []
    for chunk in lines:
        if "error" in chunk:
            detail = chunk.get("errorDetail", {}).get("message") or chunk["error"]
            raise Failed(f"image build failed: {str(detail).strip()} | " + " | ".join(tail[-5:]))
        text = chunk.get("stream") or chunk.get("status") or ""
        for line in str(text).splitlines():
            if line.strip():
                log(line)
                tail = [*tail[-19:], line]


@contextmanager
def _build_context(dockerfile_text: str, wayland: bool = False) -> Iterator[IO[bytes]]:
    """The build context as a tar stream: the Dockerfile, the agent's code and its
    libraries (a Wayland image's with pywayland's), read straight from holm's environment
    (nothing copied on disk)."""
    with tempfile.TemporaryFile() as file:
        with tarfile.open(fileobj=file, mode="w") as tar:
            data = dockerfile_text.encode()
            entry = tarfile.TarInfo("Dockerfile")
            entry.size = len(data)
            tar.addfile(entry, io.BytesIO(data))
            for rel, path in _agent_files():
                tar.add(path, arcname=f"holm/{rel}", recursive=False)
            for rel, path in _library_files(wayland):
                tar.add(path, arcname=f"python/{rel}", recursive=False)
        file.seek(0)
        yield file


def _agent_files() -> list[tuple[str, Path]]:
    root = _HOLM_ROOT
    files: list[tuple[str, Path]] = []
    for rel in AGENT_PATHS:
        path = root / rel
        candidates = sorted(path.rglob("*")) if path.is_dir() else [path]
        files.extend(
            (candidate.relative_to(root).as_posix(), candidate)
            for candidate in candidates
            if candidate.is_file() and "__pycache__" not in candidate.parts
        )
    return files


def _library_closure(
    libraries: tuple[str, ...], without: tuple[str, ...] = ()
) -> list[importlib.metadata.Distribution]:
    """The libraries and what they require, as installed beside holm, but for those of
    `without`'s closure. A requirement only for an extra is left out; one that is not
    installed here is not needed here."""
    seen: dict[str, importlib.metadata.Distribution] = {}
    if without:
        seen = {_normalise(d.metadata["Name"]): d for d in _library_closure(without)}
    known = set(seen)
    todo = list(libraries)
    while todo:
        name = _normalise(todo.pop())
        if name in seen:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        seen[name] = dist
        for requirement in dist.requires or []:
            if "extra ==" in requirement.replace('extra=="', 'extra == "'):
                continue
            match = re.match(r"[A-Za-z0-9._-]+", requirement)
            if match:
                todo.append(match.group(0))
    return [seen[name] for name in sorted(seen) if name not in known]


def _library_files(wayland: bool = False) -> list[tuple[str, Path]]:
    dists = _library_closure(AGENT_LIBRARIES)
    if wayland:
        dists += _library_closure(WAYLAND_LIBRARIES, AGENT_LIBRARIES)
    files: list[tuple[str, Path]] = _generated_files() if wayland else []
    for dist in dists:
        for file in dist.files or []:
            # Scripts land outside the site directory ("../../bin/…"); bytecode is remade.
            if file.parts[0] == ".." or "__pycache__" in file.parts:
                continue
            path = Path(str(file.locate()))
            if path.is_file():
                files.append((file.as_posix(), path))
    return files


def _generated_files() -> list[tuple[str, Path]]:
    """The wlroots protocols' bindings where scripts/build-wayland-protocols wrote them
    (none where pywayland is not installed: holm then builds no Wayland image that works,
    and that image's build fails at its import check)."""
    try:
        dist = importlib.metadata.distribution("pywayland")
    except importlib.metadata.PackageNotFoundError:
        return []
    site = Path(str(dist.locate_file("")))
    paths = [site / f"{module}.py" for module in GENERATED_PROTOCOLS]
    return [(p.relative_to(site).as_posix(), p) for p in paths if p.is_file()]


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _is_box_image(image: Any) -> bool:
    return any(tag.startswith(REPOSITORY + ":") for tag in image.tags)


def _created_ms(created: object) -> int | None:
    if not isinstance(created, str):
        return None
    try:
        # The engine gives nanoseconds, which fromisoformat does not take.
        moment = datetime.fromisoformat(created[:26].rstrip("Z") + "+00:00")
    except ValueError:
        return None
    return int(moment.timestamp() * 1000)


@contextmanager
def engine_errors() -> Iterator[None]:
    """Maps the docker SDK's errors to holm's at this boundary."""
    try:
        yield
    except HolmError:
        raise
    except Exception as exc:
        mapped = engine_error(exc)
        if mapped is None:
            raise
        raise mapped from exc


def engine_error(exc: BaseException) -> HolmError | None:
    """A docker SDK error as the holm error a client sees (None: not the engine's)."""
    if isinstance(exc, docker.errors.NotFound):
        return NotFound(_explain(exc))
    if isinstance(exc, docker.errors.APIError):
        status = exc.status_code or 500
        if status == 400:
            return BadRequest(_explain(exc))
        if status == 409:
            return Denied(_explain(exc))
        return Failed(_explain(exc))
    if isinstance(exc, requests.exceptions.ConnectionError):
        # Certificates an engine's TLS refused: the runtime's secrets must change.
        refused = ssl_error_in(exc)
        if refused is not None:
            return tls_refusal(refused)
    if isinstance(exc, requests.exceptions.ConnectionError | docker.errors.DockerException):
        return Unavailable(f"the Docker Engine does not answer: {exc}")
    return None


def _explain(exc: docker.errors.APIError) -> str:
    return str(getattr(exc, "explanation", None) or exc)


__all__ = [
    "DEFAULT_BASE_IMAGE",
    "ImageInfo",
    "ImageSource",
    "Images",
    "engine_arch",
    "engine_error",
    "engine_errors",
    "image_key",
    "image_ref",
    "image_source",
    "spec_dockerfile",
]
