"""A box's spec (what desktop it is) and placement (where and how long it runs).

Two boxes that differ only in placement are the same desktop: `spec_digest` is a digest of
the canonical spec alone, with its defaults filled in, so that the default feature set and
the same features listed by name give one digest (and one image).
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from typing import Literal

import msgspec

from holm.wire.catalog import catalog_app

Feature = Literal["wide_fonts", "audio", "video", "dock", "x11_apps", "accessibility"]

DEFAULT_WIDTH = 1280
DEFAULT_HEIGHT = 800
MAX_SCREENS = 8
MIN_LIFETIME_SECS = 60
DEFAULT_LIFETIME_SECS = 3600


class DesktopSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    server: Literal["x11", "wayland"] = "x11"
    width: int | None = None
    height: int | None = None
    screens: int = 1
    features: list[Feature] | None = None
    packages: list[str] = msgspec.field(default_factory=list)


class Policy(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    network: bool = True
    auth: Literal["none", "password", "token"] = "none"
    bind: Literal["loopback", "any"] = "loopback"
    advertise: str | None = None
    # Beyond the spec: with `auth: "password"`, the workspace secret (`PUT /v1/secrets/…`)
    # whose value is the VNC password, instead of one generated for the box. The spec keeps
    # the name only.
    password_secret: str | None = None


class AppDefinition(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """An application of the box: the command to start it, the WM_CLASS of its window (so
    a launch can wait for that window) and the Debian packages that give it. A catalog
    app's name with no command is that catalog app, put into the box (`{"gimp": {}}`)."""

    command: list[str] | None = None
    window_class: str | None = None
    packages: list[str] = msgspec.field(default_factory=list)


class Spec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    desktop: DesktopSpec = msgspec.field(default_factory=DesktopSpec)
    policy: Policy = msgspec.field(default_factory=Policy)
    apps: dict[str, AppDefinition] = msgspec.field(default_factory=dict)


class Placement(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    runtime: str | None = None
    memory: str | None = None
    cpus: str | None = None
    expires_after_secs: int | None = None
    idle_timeout_secs: int | None = None
    persistent: bool = False
    profile: str | None = None


def default_features(server: str) -> list[Feature]:
    features: list[Feature] = ["wide_fonts", "video", "dock", "accessibility"]
    if server == "wayland":
        features.append("x11_apps")
    return sorted(features)


def canonical_spec(spec: Spec) -> Spec:
    """The spec with every default made explicit and every list in one order."""
    d = spec.desktop
    features = default_features(d.server) if d.features is None else sorted(set(d.features))
    return Spec(
        desktop=DesktopSpec(
            server=d.server,
            width=d.width or DEFAULT_WIDTH,
            height=d.height or DEFAULT_HEIGHT,
            screens=d.screens,
            features=features,
            packages=sorted(set(d.packages)),
        ),
        policy=spec.policy,
        apps=dict(sorted(spec.apps.items())),
    )


def canonical_json(value: object) -> bytes:
    """JSON with sorted keys and no spaces: the input of every digest and key in holm."""
    return msgspec.json.encode(msgspec.to_builtins(value, order="sorted"), order="sorted")


def spec_digest(spec: Spec) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(canonical_spec(spec))).hexdigest()


def packages_of_app(name: str, definition: AppDefinition) -> list[str]:
    """The Debian packages of one of a spec's apps: its own, else its catalog app's."""
    catalog = catalog_app(name)
    if definition.packages or catalog is None:
        return list(definition.packages)
    return list(catalog.packages)


def app_packages(apps: dict[str, AppDefinition]) -> list[str]:
    """The Debian packages of all a spec's apps."""
    return sorted({pkg for name, app in apps.items() for pkg in packages_of_app(name, app)})


def _valid_package(name: str) -> bool:
    # Apt takes a name that starts with "-" as an option.
    return bool(name) and name[0].isalnum() and all(c.isalnum() or c in "+-.:" for c in name)


_HOST_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?")


def _valid_host(name: str) -> bool:
    # It goes into URLs as their host: a name, or an address (IPv6 without brackets).
    if _HOST_NAME.fullmatch(name):
        return True
    try:
        address = ipaddress.IPv6Address(name)
    except ValueError:
        return False
    # Not with a zone (`%eth0`): Python takes any character in one but `%` and `/`, and
    # `]`, `@` or `#` there would bend the URL (`[::1%]@evil.example:80#]`). A zone names an
    # interface of one host, which a viewer elsewhere has no use for.
    return address.scope_id is None


def validate_spec(spec: Spec) -> list[str]:
    """The problems of a spec, each naming its key; empty when the spec is good."""
    problems = []
    d = spec.desktop
    if not 1 <= d.screens <= MAX_SCREENS:
        problems.append(f"spec.desktop.screens must be 1 to {MAX_SCREENS}")
    for name, value in (("width", d.width), ("height", d.height)):
        if value is not None and not 64 <= value <= 8192:
            problems.append(f"spec.desktop.{name} must be 64 to 8192")
    for pkg in d.packages:
        if not _valid_package(pkg):
            problems.append(f"spec.desktop.packages has an invalid package name {pkg!r}")
    advertise = spec.policy.advertise
    if advertise is not None and not _valid_host(advertise):
        problems.append(f"spec.policy.advertise must be a host name, not {advertise!r}")
    problems += _policy_problems(spec.policy)
    for name, app in spec.apps.items():
        if app.command is None and catalog_app(name) is None:
            problems.append(f"spec.apps.{name} needs a command: it is not in the catalog")
        if app.command is not None and not app.command:
            problems.append(f"spec.apps.{name}.command is empty")
        for pkg in app.packages:
            if not _valid_package(pkg):
                problems.append(f"spec.apps.{name}.packages has an invalid package name {pkg!r}")
    return problems


# A workspace secret's name, as holm.wire.actions checks it (which imports this module).
_SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def _policy_problems(policy: Policy) -> list[str]:
    problems = []
    name = policy.password_secret
    if name is not None and not _SECRET_NAME.fullmatch(name):
        problems.append(
            f"spec.policy.password_secret: bad secret name {name!r}: letters, digits, _ . - "
            "(a letter or _ first), at most 64"
        )
    if name is not None and policy.auth != "password":
        problems.append('spec.policy.password_secret is for auth "password"')
    if policy.bind == "any" and policy.auth != "password":
        # Off loopback, only a door that asks for a password is published: an open VNC
        # server, or holmd's tickets (which need no port of their own), is not.
        problems.append('spec.policy.bind "any" needs auth "password"')
    return problems


def validate_placement(placement: Placement) -> list[str]:
    problems = []
    for name in ("expires_after_secs", "idle_timeout_secs"):
        value = getattr(placement, name)
        if value is not None and value < MIN_LIFETIME_SECS:
            problems.append(f"placement.{name} must be at least {MIN_LIFETIME_SECS}")
    return problems
